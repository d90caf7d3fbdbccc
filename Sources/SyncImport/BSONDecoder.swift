/// Decodes one BSON document from its bytes (the BSON 1.1 specification), strictly: every
/// length must agree with the bytes, strings must be UTF-8 with their terminator, booleans
/// 0 or 1. Pure: no I/O; ``MongoDumpReader`` feeds it the documents of a file.
public struct BSONDecoder: Sendable {
    /// The deepest nesting of documents and arrays accepted (MongoDB stores at most 100).
    public var maximumDepth: Int

    public init(maximumDepth: Int = 200) {
        self.maximumDepth = maximumDepth
    }

    /// The document that fills all of `bytes` (its int32 length prefix included).
    public func decode(_ bytes: some Collection<UInt8>) throws(ImportError) -> BSONDocument {
        let result: Result<BSONDocument, ImportError>? = bytes.withContiguousStorageIfAvailable { buffer in
            Self.decode(UnsafeRawBufferPointer(buffer), maximumDepth: maximumDepth)
        }
        if let result { return try result.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBytes { Self.decode($0, maximumDepth: maximumDepth) }.get()
    }

    private static func decode(_ bytes: UnsafeRawBufferPointer, maximumDepth: Int) -> Result<BSONDocument, ImportError> {
        var reader = BSONReader(bytes: bytes, maximumDepth: maximumDepth)
        do throws(ImportError) {
            let document = try reader.readDocument(upTo: bytes.count)
            guard reader.index == bytes.count else {
                throw reader.failure("the document's length prefix says \(reader.index) bytes, but \(bytes.count) were given")
            }
            return .success(document)
        } catch {
            var error = error
            if error.documentID == nil, let id = reader.topLevelID { error.documentID = id.displayText }
            return .failure(error)
        }
    }
}

private struct BSONReader {
    let bytes: UnsafeRawBufferPointer
    let maximumDepth: Int
    var index = 0
    var path = PathStack()
    var depth = 0
    /// The top-level `_id`, once read, so that a later error can name the document.
    var topLevelID: BSONValue?

    init(bytes: UnsafeRawBufferPointer, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    func failure(_ message: String, at offset: Int? = nil) -> ImportError {
        ImportError(.malformedBSON, message + " (byte \(offset ?? index) of the document)", path: path.path)
    }

    mutating func need(_ count: Int, before end: Int, for what: String) throws(ImportError) {
        guard count >= 0, index <= end - count else {
            throw failure("\(what) needs \(count) bytes but only \(max(end - index, 0)) remain")
        }
    }

    /// A little-endian unsigned integer of `T`'s width.
    mutating func readLittleEndian<T: FixedWidthInteger & UnsignedInteger>(
        _: T.Type, before end: Int, for what: String
    ) throws(ImportError) -> T {
        let width = T.bitWidth / 8
        try need(width, before: end, for: what)
        var value: T = 0
        for offset in 0..<width { value |= T(bytes[index + offset]) << (8 * offset) }
        index += width
        return value
    }

    mutating func readUInt32(before end: Int, for what: String) throws(ImportError) -> UInt32 {
        try readLittleEndian(UInt32.self, before: end, for: what)
    }

    mutating func readUInt64(before end: Int, for what: String) throws(ImportError) -> UInt64 {
        try readLittleEndian(UInt64.self, before: end, for: what)
    }

    mutating func readInt32(before end: Int, for what: String) throws(ImportError) -> Int32 {
        Int32(bitPattern: try readUInt32(before: end, for: what))
    }

    mutating func readBytes(_ count: Int, before end: Int, for what: String) throws(ImportError) -> [UInt8] {
        try need(count, before: end, for: what)
        let slice = Array(UnsafeRawBufferPointer(rebasing: bytes[index..<index + count]))
        index += count
        return slice
    }

    /// A NUL-terminated UTF-8 string (field names, regular expressions).
    mutating func readCString(before end: Int, for what: String) throws(ImportError) -> String {
        let start = index
        var cursor = index
        while cursor < end, bytes[cursor] != 0 { cursor += 1 }
        guard cursor < end else { throw failure("\(what) has no terminating NUL before the end of its document", at: start) }
        index = cursor + 1
        return try utf8(start..<cursor, for: what)
    }

    /// A string: int32 length (with the NUL), the UTF-8 bytes, NUL.
    mutating func readString(before end: Int, for what: String) throws(ImportError) -> String {
        let lengthOffset = index
        let length = try readInt32(before: end, for: what)
        guard length >= 1 else { throw failure("\(what) has length \(length); the least is 1", at: lengthOffset) }
        try need(Int(length), before: end, for: what)
        let terminator = index + Int(length) - 1
        guard bytes[terminator] == 0 else {
            throw failure("\(what) of length \(length) does not end with NUL", at: lengthOffset)
        }
        let text = try utf8(index..<terminator, for: what)
        index = terminator + 1
        return text
    }

    func utf8(_ range: Range<Int>, for what: String) throws(ImportError) -> String {
        let slice = UnsafeRawBufferPointer(rebasing: bytes[range])
        guard let text = String(validating: slice, as: UTF8.self) else {
            throw failure("\(what) is not valid UTF-8", at: range.lowerBound)
        }
        return text
    }

    /// A document (or array) starting at `index`, which must end by `limit`.
    mutating func readDocument(upTo limit: Int) throws(ImportError) -> BSONDocument {
        let start = index
        let end = try documentEnd(upTo: limit)
        depth += 1
        defer { depth -= 1 }
        guard depth <= maximumDepth else {
            throw ImportError(.tooDeep, "documents and arrays nest deeper than \(maximumDepth) levels", path: path.path)
        }
        var fields: [BSONDocument.Field] = []
        while true {
            guard index < end else { throw failure("the document has no terminating NUL", at: start) }
            let type = bytes[index]
            index += 1
            if type == 0 {
                guard index == end else {
                    throw failure("the document ends at byte \(index) but its length prefix says \(end)", at: index - 1)
                }
                return BSONDocument(fields)
            }
            let name = try readCString(before: end, for: "a field name")
            path.push(.field(name))
            let value = try readValue(type: type, before: end)
            path.pop()
            if depth == 1, name == "_id", topLevelID == nil { topLevelID = value }
            fields.append(BSONDocument.Field(name, value))
        }
    }

    /// Reads a document's length prefix and returns where the document ends.
    mutating func documentEnd(upTo limit: Int) throws(ImportError) -> Int {
        let start = index
        let length = try readInt32(before: limit, for: "a document's length")
        guard length >= 5 else { throw failure("a document's length is \(length); the least is 5", at: start) }
        guard Int(length) <= limit - start else {
            throw failure("a document's length is \(length) but only \(limit - start) bytes remain", at: start)
        }
        return start + Int(length)
    }

    mutating func readArray(upTo limit: Int) throws(ImportError) -> [BSONValue] {
        let start = index
        let end = try documentEnd(upTo: limit)
        depth += 1
        defer { depth -= 1 }
        guard depth <= maximumDepth else {
            throw ImportError(.tooDeep, "documents and arrays nest deeper than \(maximumDepth) levels", path: path.path)
        }
        var elements: [BSONValue] = []
        while true {
            guard index < end else { throw failure("the array has no terminating NUL", at: start) }
            let type = bytes[index]
            index += 1
            if type == 0 {
                guard index == end else {
                    throw failure("the array ends at byte \(index) but its length prefix says \(end)", at: index - 1)
                }
                return elements
            }
            // The keys of an array are its indices; their text is not checked (drivers differ).
            _ = try readCString(before: end, for: "an array index")
            path.push(.index(elements.count))
            elements.append(try readValue(type: type, before: end))
            path.pop()
        }
    }

    mutating func readValue(type: UInt8, before end: Int) throws(ImportError) -> BSONValue {
        switch type {
        case 0x01:
            return .double(Double(bitPattern: try readUInt64(before: end, for: "a double")))
        case 0x02:
            return .string(try readString(before: end, for: "a string"))
        case 0x03:
            return .document(try readDocument(upTo: end))
        case 0x04:
            return .array(try readArray(upTo: end))
        case 0x05:
            return .binary(try readBinary(before: end))
        case 0x06:
            return .undefined
        case 0x07:
            return .objectID(ObjectID(bytes: try readBytes(12, before: end, for: "an ObjectId"))!)
        case 0x08:
            try need(1, before: end, for: "a boolean")
            let byte = bytes[index]
            guard byte <= 1 else { throw failure("a boolean is \(byte); only 0 and 1 are booleans") }
            index += 1
            return .bool(byte == 1)
        case 0x09:
            return .dateTime(Int64(bitPattern: try readUInt64(before: end, for: "a date")))
        case 0x0A:
            return .null
        case 0x0B:
            let pattern = try readCString(before: end, for: "a regular expression's pattern")
            let options = try readCString(before: end, for: "a regular expression's options")
            return .regularExpression(pattern: pattern, options: options)
        case 0x0C:
            let namespace = try readString(before: end, for: "a DBPointer's namespace")
            let id = ObjectID(bytes: try readBytes(12, before: end, for: "a DBPointer's ObjectId"))!
            return .dbPointer(namespace: namespace, id: id)
        case 0x0D:
            return .javaScript(try readString(before: end, for: "JavaScript code"))
        case 0x0E:
            return .symbol(try readString(before: end, for: "a symbol"))
        case 0x0F:
            let start = index
            let total = try readInt32(before: end, for: "code with scope's length")
            // int32 total, string (4 + at least 1), document (at least 5).
            guard total >= 14, Int(total) <= end - start else {
                throw failure("code with scope has length \(total), which its bytes cannot hold", at: start)
            }
            let scopeEnd = start + Int(total)
            let code = try readString(before: scopeEnd, for: "code with scope's code")
            let scope = try readDocument(upTo: scopeEnd)
            guard index == scopeEnd else {
                throw failure("code with scope's length says \(total) bytes but its parts hold \(index - start)", at: start)
            }
            return .javaScriptWithScope(code: code, scope: scope)
        case 0x10:
            return .int32(try readInt32(before: end, for: "an int32"))
        case 0x11:
            let value = try readUInt64(before: end, for: "a timestamp")
            return .timestamp(seconds: UInt32(truncatingIfNeeded: value >> 32), increment: UInt32(truncatingIfNeeded: value))
        case 0x12:
            return .int64(Int64(bitPattern: try readUInt64(before: end, for: "an int64")))
        case 0x13:
            return .decimal128(Decimal128(bytes: try readBytes(16, before: end, for: "a Decimal128"))!)
        case 0xFF:
            return .minKey
        case 0x7F:
            return .maxKey
        default:
            throw failure("unknown element type 0x\(HexText.string([type]))", at: index - 1)
        }
    }

    mutating func readBinary(before end: Int) throws(ImportError) -> BSONBinary {
        let start = index
        let length = try readInt32(before: end, for: "binary data's length")
        guard length >= 0 else { throw failure("binary data has length \(length)", at: start) }
        try need(1, before: end, for: "binary data's subtype")
        let subtype = bytes[index]
        index += 1
        var payload = try readBytes(Int(length), before: end, for: "binary data")
        if subtype == BSONBinary.oldBinary {
            // Subtype 2 repeats the length of what follows in its first four bytes.
            guard payload.count >= 4 else { throw failure("binary subtype 2 has no inner length", at: start) }
            let inner = payload[0..<4].enumerated().reduce(Int32(0)) { $0 | Int32($1.element) << (8 * $1.offset) }
            guard Int(inner) == payload.count - 4 else {
                throw failure("binary subtype 2 says \(inner) bytes inside \(payload.count - 4)", at: start)
            }
            payload.removeFirst(4)
        }
        return BSONBinary(subtype: subtype, bytes: payload)
    }
}
