/// A ``ChangeBatch`` whose objects are already in their wire form: the server reads stored
/// bodies as JSON text and splices them into the `changes` message without decoding them
/// into ``JSONValue``s and serializing them again. The message it builds is the one
/// ``ServerMessage/changes(_:)`` describes (same fields, same order; bodies keep the
/// database's key order).
public struct EncodedChangeBatch: Sendable {
    /// One object, encoded: `{"body":…,"collection":…,"deleted":…,"id":…,"version":…}`.
    public struct Object: Sendable {
        public var key: ObjectKey
        public var version: Int64
        public var isDeleted: Bool
        /// The object's wire JSON.
        public var bytes: [UInt8]

        /// Encodes an object whose body is JSON text (`nil` for a tombstone). The text is
        /// trusted to be a valid JSON object (it comes from a `jsonb` column); insignificant
        /// whitespace is removed.
        public init(key: ObjectKey, version: Int64, bodyText: UnsafeRawBufferPointer?) {
            self.init(key: key, version: version, bodyLength: bodyText?.count) { bytes in
                JSONText.appendCompact(bodyText!, to: &bytes)
            }
        }

        /// Encodes an object whose body is compact JSON already (the engine's own
        /// serialization of a body it just wrote); `nil` for a tombstone.
        public init(key: ObjectKey, version: Int64, compactBody: [UInt8]?) {
            self.init(key: key, version: version, bodyLength: compactBody?.count) { bytes in
                bytes.append(contentsOf: compactBody!)
            }
        }

        private init(key: ObjectKey, version: Int64, bodyLength: Int?, appendBody: (inout [UInt8]) -> Void) {
            self.key = key
            self.version = version
            self.isDeleted = bodyLength == nil
            var bytes: [UInt8] = []
            bytes.reserveCapacity((bodyLength ?? 0) + key.collection.utf8.count + key.id.utf8.count + 64)
            if bodyLength != nil {
                bytes.append(contentsOf: #"{"body":"#.utf8)
                appendBody(&bytes)
                bytes.append(contentsOf: #","collection":"#.utf8)
            } else {
                bytes.append(contentsOf: #"{"collection":"#.utf8)
            }
            JSONValue.string(key.collection).write(to: &bytes)
            bytes.append(contentsOf: (bodyLength == nil ? #","deleted":true,"id":"# : #","deleted":false,"id":"#).utf8)
            JSONValue.string(key.id).write(to: &bytes)
            bytes.append(contentsOf: #","version":"#.utf8)
            bytes.append(contentsOf: String(version).utf8)
            bytes.append(UInt8(ascii: "}"))
            self.bytes = bytes
        }
    }

    public var partition: Partition
    public var objects: [Object]
    public var cursor: Cursor
    public var upToDate: Bool
    public var reset: Bool
    public var version: Int64?

    public init(partition: Partition, objects: [Object], cursor: Cursor, upToDate: Bool, reset: Bool, version: Int64? = nil) {
        self.partition = partition
        self.objects = objects
        self.cursor = cursor
        self.upToDate = upToDate
        self.reset = reset
        self.version = version
    }

    /// The text of the `changes` message for this batch, or for some of its objects.
    public func message(objects selected: [Object]? = nil, reset: Bool? = nil) -> String {
        let objects = selected ?? self.objects
        var bytes: [UInt8] = []
        bytes.reserveCapacity(objects.reduce(160) { $0 + $1.bytes.count + 1 })
        bytes.append(contentsOf: #"{"cursor":"#.utf8)
        JSONValue.string(cursor.rawValue).write(to: &bytes)
        bytes.append(contentsOf: #","objects":["#.utf8)
        for (offset, object) in objects.enumerated() {
            if offset > 0 { bytes.append(UInt8(ascii: ",")) }
            bytes.append(contentsOf: object.bytes)
        }
        bytes.append(contentsOf: #"],"partition":"#.utf8)
        JSONValue.string(partition.description).write(to: &bytes)
        bytes.append(contentsOf: ((reset ?? self.reset) ? #","reset":true"# : #","reset":false"#).utf8)
        bytes.append(contentsOf: #","type":"changes","upToDate":"#.utf8)
        bytes.append(contentsOf: (upToDate ? "true" : "false").utf8)
        if let version {
            bytes.append(contentsOf: #","version":"#.utf8)
            bytes.append(contentsOf: String(version).utf8)
        }
        bytes.append(UInt8(ascii: "}"))
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// Operations on JSON text that need no parse.
public enum JSONText {
    /// Appends `text` without the whitespace outside its strings.
    public static func appendCompact(_ text: UnsafeRawBufferPointer, to output: inout [UInt8]) {
        // Copies runs between whitespace bytes at once: PostgreSQL's jsonb text puts a space
        // only after its separators, so runs are long.
        var inString = false
        var escaped = false
        var runStart = 0
        for index in 0..<text.count {
            let byte = text[index]
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
                continue
            }
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"):
                if runStart < index { output.append(contentsOf: UnsafeRawBufferPointer(rebasing: text[runStart..<index])) }
                runStart = index + 1
            case UInt8(ascii: "\""):
                inString = true
            default:
                break
            }
        }
        if runStart < text.count { output.append(contentsOf: UnsafeRawBufferPointer(rebasing: text[runStart..<text.count])) }
    }
}
