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
            self.init(key: key, version: version, bodyText: bodyText, isCompact: false)
        }

        /// Encodes an object whose body is compact JSON already (the engine's own
        /// serialization of a body it just wrote); `nil` for a tombstone.
        public init(key: ObjectKey, version: Int64, compactBody: [UInt8]?) {
            if let compactBody {
                self = compactBody.withUnsafeBytes { Object(key: key, version: version, bodyText: $0, isCompact: true) }
            } else {
                self.init(key: key, version: version, bodyText: nil, isCompact: true)
            }
        }

        private init(key: ObjectKey, version: Int64, bodyText: UnsafeRawBufferPointer?, isCompact: Bool) {
            self.key = key
            self.version = version
            self.isDeleted = bodyText == nil
            var bytes: [UInt8] = []
            bytes.reserveCapacity((bodyText?.count ?? 0) + key.collection.utf8.count + key.id.utf8.count + 64)
            var collection = key.collection
            var id = key.id
            collection.withUTF8 { collection in
                id.withUTF8 { id in
                    Self.write(
                        collection: UnsafeRawBufferPointer(collection), id: UnsafeRawBufferPointer(id), version: version,
                        bodyText: bodyText, isCompact: isCompact, to: &bytes)
                }
            }
            self.bytes = bytes
        }

        /// Appends the wire JSON of an object to `output`, from the UTF-8 of its collection
        /// and id and the JSON text of its body (`nil` for a tombstone), which is trusted to
        /// be a valid JSON object and loses its insignificant whitespace (unless `isCompact`
        /// says it has none).
        public static func write(
            collection: UnsafeRawBufferPointer, id: UnsafeRawBufferPointer, version: Int64, bodyText: UnsafeRawBufferPointer?,
            isCompact: Bool = false, to output: inout [UInt8]
        ) {
            if let bodyText {
                output.append(contentsOf: #"{"body":"#.utf8)
                if isCompact {
                    output.append(contentsOf: bodyText)
                } else {
                    JSONText.appendCompact(bodyText, to: &output)
                }
                output.append(contentsOf: #","collection":"#.utf8)
            } else {
                output.append(contentsOf: #"{"collection":"#.utf8)
            }
            JSONText.appendString(utf8: collection, to: &output)
            output.append(contentsOf: (bodyText == nil ? #","deleted":true,"id":"# : #","deleted":false,"id":"#).utf8)
            JSONText.appendString(utf8: id, to: &output)
            output.append(contentsOf: #","version":"#.utf8)
            JSONText.appendInteger(version, to: &output)
            output.append(UInt8(ascii: "}"))
        }
    }

    public var partition: Partition
    /// The objects one by one (empty for a batch made from ``objectsJSON``).
    public var objects: [Object]
    /// The objects already written out as the elements of the message's `objects` array, for
    /// a batch read whole from storage; `nil` when the batch holds ``objects``.
    public var objectsJSON: [UInt8]?
    /// How many objects the batch holds.
    public var objectCount: Int
    public var cursor: Cursor
    public var upToDate: Bool
    public var reset: Bool
    public var version: Int64?
    /// ``ChangeBatch/total``: set by the session on the first page of a catch-up, when asked.
    public var total: Int?

    public init(partition: Partition, objects: [Object], cursor: Cursor, upToDate: Bool, reset: Bool, version: Int64? = nil) {
        self.partition = partition
        self.objects = objects
        self.objectCount = objects.count
        self.cursor = cursor
        self.upToDate = upToDate
        self.reset = reset
        self.version = version
    }

    /// A batch whose objects are written out already: `objectsJSON` holds `objectCount`
    /// objects' wire JSON, separated by commas.
    public init(partition: Partition, objectsJSON: [UInt8], objectCount: Int, cursor: Cursor, upToDate: Bool, reset: Bool, version: Int64? = nil) {
        self.partition = partition
        self.objects = []
        self.objectsJSON = objectsJSON
        self.objectCount = objectCount
        self.cursor = cursor
        self.upToDate = upToDate
        self.reset = reset
        self.version = version
    }

    /// The text of the `changes` message for this batch, or for some of its objects.
    public func message(objects selected: [Object]? = nil, reset: Bool? = nil) -> String {
        String(decoding: messageBytes(objects: selected, reset: reset), as: UTF8.self)
    }

    /// ``message(objects:reset:)`` as UTF-8 bytes, for a writer that sends bytes.
    public func messageBytes(objects selected: [Object]? = nil, reset: Bool? = nil) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(messageSize(objects: selected))
        writeMessage(objects: selected, reset: reset) { bytes.append(contentsOf: $0) }
        return bytes
    }

    /// About how many bytes ``messageBytes(objects:reset:)`` has: room to reserve.
    public func messageSize(objects selected: [Object]? = nil) -> Int {
        let objects = (selected == nil ? objectsJSON?.count : nil) ?? (selected ?? self.objects).reduce(0) { $0 + $1.bytes.count + 1 }
        return objects + cursor.rawValue.utf8.count + partition.description.utf8.count + 120
    }

    /// Hands the message's bytes to `emit` in a few pieces, in order (the objects of a whole
    /// batch in one piece): a writer can copy them straight into its own buffer.
    public func writeMessage(objects selected: [Object]? = nil, reset: Bool? = nil, _ emit: (UnsafeRawBufferPointer) -> Void) {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(160)
        bytes.append(contentsOf: #"{"cursor":"#.utf8)
        JSONValue.string(cursor.rawValue).write(to: &bytes)
        bytes.append(contentsOf: #","objects":["#.utf8)
        bytes.withUnsafeBytes(emit)
        bytes.removeAll(keepingCapacity: true)
        if selected == nil, let objectsJSON {
            objectsJSON.withUnsafeBytes(emit)
        } else {
            let comma: [UInt8] = [UInt8(ascii: ",")]
            for (offset, object) in (selected ?? objects).enumerated() {
                if offset > 0 { comma.withUnsafeBytes(emit) }
                object.bytes.withUnsafeBytes(emit)
            }
        }
        bytes.append(contentsOf: #"],"partition":"#.utf8)
        JSONValue.string(partition.description).write(to: &bytes)
        bytes.append(contentsOf: #","reset":"#.utf8)
        bytes.append(contentsOf: ((reset ?? self.reset) ? "true" : "false").utf8)
        if let total {
            bytes.append(contentsOf: #","total":"#.utf8)
            JSONText.appendInteger(Int64(total), to: &bytes)
        }
        bytes.append(contentsOf: #","type":"changes","upToDate":"#.utf8)
        bytes.append(contentsOf: (upToDate ? "true" : "false").utf8)
        if let version {
            bytes.append(contentsOf: #","version":"#.utf8)
            JSONText.appendInteger(version, to: &bytes)
        }
        bytes.append(UInt8(ascii: "}"))
        bytes.withUnsafeBytes(emit)
    }
}

/// Operations on JSON text that need no parse.
public enum JSONText {
    /// Appends the decimal digits of `value`.
    public static func appendInteger(_ value: Int64, to output: inout [UInt8]) {
        if value >= 0, value < 10 {
            output.append(UInt8(ascii: "0") + UInt8(value))
            return
        }
        // The magnitude as UInt64, so Int64.min has one too.
        var magnitude = value.magnitude
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
        let count = withUnsafeMutableBytes(of: &digits) { buffer -> Int in
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            return buffer.count - index
        }
        if value < 0 { output.append(UInt8(ascii: "-")) }
        withUnsafeBytes(of: &digits) { output.append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[($0.count - count)...])) }
    }

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
