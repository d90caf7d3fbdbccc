/// The name of a blob: `sha256:` followed by the 64 lowercase hexadecimal digits of the
/// SHA-256 digest of its bytes. The same bytes always have the same name, so a blob is stored
/// once however many objects reference it.
public struct BlobDigest: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The prefix of every digest.
    public static let prefix = "sha256:"

    /// The digest as written on the wire, `sha256:<64 hex>`.
    public let rawValue: String

    /// Checks the form `sha256:<64 lowercase hex>`; `invalid_blob_reference` otherwise.
    public init(_ rawValue: String) throws(SyncError) {
        let utf8 = rawValue.utf8
        guard utf8.count == Self.prefix.utf8.count + 64, rawValue.hasPrefix(Self.prefix),
            utf8.dropFirst(Self.prefix.utf8.count).allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) })
        else {
            throw SyncError(.invalidBlobReference, "a blob digest is 'sha256:' and 64 lowercase hexadecimal digits")
        }
        self.rawValue = rawValue
    }

    /// The digest of 32 SHA-256 bytes.
    public init(sha256 bytes: some Sequence<UInt8>) {
        let hex: [Character] = Array("0123456789abcdef")
        var text = Self.prefix
        for byte in bytes {
            text.append(hex[Int(byte >> 4)])
            text.append(hex[Int(byte & 0x0F)])
        }
        precondition(text.utf8.count == Self.prefix.utf8.count + 64, "a SHA-256 digest has 32 bytes")
        rawValue = text
    }

    public var description: String { rawValue }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}
