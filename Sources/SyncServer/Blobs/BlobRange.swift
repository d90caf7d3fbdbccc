import Foundation

/// What a `Range` request header asks of a blob of `length` bytes (RFC 9110, section 14):
/// one byte range is served as such; several ranges, or a header that is not a valid
/// `bytes=` range, are ignored (the whole blob is sent, which the RFC allows).
enum BlobRange: Equatable {
    case whole
    case part(Range<Int64>)
    /// 416, with `Content-Range: bytes */<length>`.
    case unsatisfiable

    init(header: String?, length: Int64) {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else {
            self = .whole
            return
        }
        let spec = header.dropFirst("bytes=".count).trimmingCharacters(in: .whitespaces)
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            self = .whole
            return
        }
        let (first, last) = (parts[0], parts[1])
        guard first.allSatisfy(\.isASCIIDigit), last.allSatisfy(\.isASCIIDigit), !(first.isEmpty && last.isEmpty) else {
            self = .whole
            return
        }
        if first.isEmpty {
            // The last n bytes.
            guard let count = Int64(last) else {
                self = .whole
                return
            }
            guard count > 0, length > 0 else {
                self = .unsatisfiable
                return
            }
            self = .part(max(0, length - count)..<length)
            return
        }
        guard let start = Int64(first) else {
            // Past any length.
            self = .unsatisfiable
            return
        }
        let end = last.isEmpty ? length - 1 : min(Int64(last) ?? Int64.max, length - 1)
        guard start < length else {
            self = .unsatisfiable
            return
        }
        guard end >= start else {
            self = .whole
            return
        }
        self = .part(start..<(end + 1))
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
