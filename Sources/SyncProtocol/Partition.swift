/// A partition string `key=value`: the unit a client subscribes to and an upload writes to.
///
/// `key` matches `[a-z][a-z0-9_-]{0,63}`; `value` is 1–256 characters with no `=` and no
/// control characters. Which keys exist is up to the application's permission rules.
public struct Partition: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let key: String
    public let value: String
    /// `key=value`, made once: partitions are hashed, compared and sent to the database far
    /// more often than they are made.
    public let description: String

    /// Parses `key=value`, throwing `invalid_partition` for anything else.
    public init(_ string: String) throws(SyncError) {
        guard let equals = string.utf8.firstIndex(of: UInt8(ascii: "=")) else {
            throw SyncError(.invalidPartition, "a partition is key=value, got \(Self.quoted(string))")
        }
        try self.init(key: String(string[..<equals]), value: String(string[string.utf8.index(after: equals)...]))
    }

    /// Builds a partition from its parts, throwing `invalid_partition` when one is malformed.
    public init(key: String, value: String) throws(SyncError) {
        guard Self.isValidKey(key) else {
            throw SyncError(.invalidPartition, "a partition key matches [a-z][a-z0-9_-]{0,63}, got \(Self.quoted(key))")
        }
        if !Self.isPlainASCII(value, maximumCount: 256) || value.utf8.contains(UInt8(ascii: "=")) {
            let scalars = value.unicodeScalars
            guard !scalars.isEmpty, scalars.count <= 256 else {
                throw SyncError(.invalidPartition, "a partition value has 1 to 256 characters")
            }
            guard !scalars.contains(where: { $0 == "=" || Self.isControl($0) }) else {
                throw SyncError(.invalidPartition, "a partition value holds no '=' and no control characters")
            }
        }
        self.key = key
        self.value = value
        self.description = key + "=" + value
    }

    public static func == (lhs: Partition, rhs: Partition) -> Bool {
        lhs.description == rhs.description
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(description)
    }

    public static func < (lhs: Partition, rhs: Partition) -> Bool {
        lhs.description.utf8Precedes(rhs.description)
    }

    /// Whether `text` is 1 to `maximumCount` printable ASCII characters: the common case,
    /// checked on its bytes without decoding scalars (every upload checks its keys).
    static func isPlainASCII(_ text: String, maximumCount: Int) -> Bool {
        let bytes = text.utf8
        guard !bytes.isEmpty, bytes.count <= maximumCount else { return false }
        return bytes.allSatisfy { $0 >= 0x20 && $0 < 0x7F }
    }

    /// Unicode's control characters (general category Cc), without a property lookup for ASCII.
    static func isControl(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII { return scalar.value < 0x20 || scalar.value == 0x7F }
        return scalar.properties.generalCategory == .control
    }

    static func isValidKey(_ key: String) -> Bool {
        let bytes = key.utf8
        guard let first = bytes.first, bytes.count <= 64, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first) else {
            return false
        }
        return bytes.dropFirst().allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }

    static func quoted(_ text: String) -> String {
        let shown = text.unicodeScalars.count > 80 ? String(text.unicodeScalars.prefix(80)) + "…" : text
        return "\"" + shown.unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : String($0) }.joined() + "\""
    }
}

extension Partition: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let string = try container.decode(String.self)
        do {
            try self.init(string)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.message)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
