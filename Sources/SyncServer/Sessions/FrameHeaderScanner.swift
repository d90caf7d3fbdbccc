import PartitionSync

/// Follows the frames of an incoming WebSocket byte stream by their headers alone, without
/// buffering their payloads, so that a frame longer than allowed is refused from its header
/// (before the WebSocket decoder reads it whole). A pure state machine: feed it bytes as they
/// arrive; it says when a frame declares more than `limit` bytes.
///
/// A header is 2 bytes, then 2 or 8 bytes of extended length (for lengths 126 and 127), then
/// a 4-byte mask key when the mask bit is set (always, from a client).
struct FrameHeaderScanner {
    enum Action: Equatable {
        /// Every frame begun so far is within the limit.
        case pass
        /// A frame declares `length` payload bytes, more than the limit.
        case refuse(length: UInt64)
    }

    private enum State {
        /// Reading a header: the bytes of it seen so far.
        case header([UInt8])
        /// Passing over a payload: the bytes of it still to come.
        case payload(remaining: UInt64)
    }

    let limit: UInt64
    private var state = State.header([])

    init(limit: Int) {
        self.limit = UInt64(max(0, limit))
    }

    /// Takes the next bytes of the stream.
    mutating func scan(_ bytes: some Collection<UInt8>) -> Action {
        var index = bytes.startIndex
        while index != bytes.endIndex {
            switch state {
            case .payload(let remaining):
                let available = UInt64(bytes.distance(from: index, to: bytes.endIndex))
                let skipped = min(remaining, available)
                index = bytes.index(index, offsetBy: Int(skipped))
                state = remaining == skipped ? .header([]) : .payload(remaining: remaining - skipped)
            case .header(var header):
                header.append(bytes[index])
                index = bytes.index(after: index)
                guard let (length, size) = Self.parse(header) else {
                    state = .header(header)
                    continue
                }
                guard header.count == size else {
                    state = .header(header)
                    continue
                }
                if length > limit { return .refuse(length: length) }
                state = length == 0 ? .header([]) : .payload(remaining: length)
            }
        }
        return .pass
    }

    /// The payload length and the whole header's size, once the header has enough bytes to
    /// tell them; `nil` before.
    private static func parse(_ header: [UInt8]) -> (length: UInt64, size: Int)? {
        guard header.count >= 2 else { return nil }
        let masked = header[1] & 0x80 != 0
        let short = UInt64(header[1] & 0x7F)
        let extended = short == 126 ? 2 : short == 127 ? 8 : 0
        let size = 2 + extended + (masked ? 4 : 0)
        guard header.count >= 2 + extended else { return nil }
        var length = short
        if extended > 0 {
            length = header[2..<(2 + extended)].reduce(0) { ($0 << 8) | UInt64($1) }
        }
        return (length, size)
    }
}
