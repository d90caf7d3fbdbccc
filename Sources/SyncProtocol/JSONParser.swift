/// A strict RFC 8259 JSON parser producing ``JSONValue``.
///
/// Written here rather than taken from Foundation because the sync engine needs three things
/// Foundation's decoders do not give together: a nesting limit enforced while parsing (so a
/// hostile frame cannot exhaust the stack), integers kept exact as `Int64`, and rejection of
/// invalid UTF-8 instead of silent repair.
public struct JSONParser: Sendable {
    /// The deepest nesting of arrays and objects accepted. Default 64.
    public var maximumDepth: Int

    public init(maximumDepth: Int = 64) {
        self.maximumDepth = maximumDepth
    }

    /// Parses one JSON value filling all of `bytes` (surrounding whitespace allowed).
    public func parse(_ bytes: some Collection<UInt8>) throws(JSONParseError) -> JSONValue {
        let result: Result<JSONValue, JSONParseError>? = bytes.withContiguousStorageIfAvailable { buffer in
            Self.parse(buffer: UnsafeRawBufferPointer(buffer), maximumDepth: maximumDepth)
        }
        if let result { return try result.get() }
        let copy = Array(bytes)
        return try copy.withUnsafeBytes { Self.parse(buffer: $0, maximumDepth: maximumDepth) }.get()
    }

    /// Parses one JSON value from a string.
    public func parse(_ string: String) throws(JSONParseError) -> JSONValue {
        var string = string
        let result = string.withUTF8 { Self.parse(buffer: UnsafeRawBufferPointer($0), maximumDepth: maximumDepth) }
        return try result.get()
    }

    private static func parse(buffer: UnsafeRawBufferPointer, maximumDepth: Int) -> Result<JSONValue, JSONParseError> {
        var reader = Reader(bytes: buffer, maximumDepth: maximumDepth)
        do throws(JSONParseError) {
            reader.skipWhitespace()
            let value = try reader.parseValue(depth: 0)
            reader.skipWhitespace()
            guard reader.isAtEnd else { throw reader.error(.trailingCharacters) }
            return .success(value)
        } catch {
            return .failure(error)
        }
    }
}

/// Why a text is not acceptable JSON, and where.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Reason: String, Sendable, Hashable {
        case unexpectedEnd = "unexpected end of input"
        case unexpectedCharacter = "unexpected character"
        case trailingCharacters = "characters after the value"
        case invalidNumber = "invalid number"
        case numberOutOfRange = "number out of range"
        case invalidString = "invalid string"
        case invalidEscape = "invalid escape sequence"
        case invalidUTF8 = "invalid UTF-8"
        case tooDeep = "nesting too deep"
    }

    public var reason: Reason
    /// Byte offset of the problem in the input.
    public var offset: Int

    public init(reason: Reason, offset: Int) {
        self.reason = reason
        self.offset = offset
    }

    public var description: String { "\(reason.rawValue) at byte \(offset)" }
}

private struct Reader {
    let bytes: UnsafeRawBufferPointer
    let maximumDepth: Int
    var index = 0
    /// The fields of the objects being parsed, innermost last: an object's dictionary is made
    /// once its fields are known, at its size, rather than grown (and rehashed) field by field.
    var pendingFields: [(key: String, value: JSONValue)] = []

    init(bytes: UnsafeRawBufferPointer, maximumDepth: Int) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
    }

    var isAtEnd: Bool { index >= bytes.count }

    func error(_ reason: JSONParseError.Reason) -> JSONParseError {
        JSONParseError(reason: reason, offset: index)
    }

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    func peek() throws(JSONParseError) -> UInt8 {
        guard index < bytes.count else { throw error(.unexpectedEnd) }
        return bytes[index]
    }

    mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        switch try peek() {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
        case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
        case UInt8(ascii: "n"): try expectLiteral("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw error(.unexpectedCharacter)
        }
    }

    mutating func expectLiteral(_ literal: StaticString) throws(JSONParseError) {
        let count = literal.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw error(.unexpectedEnd) }
        let start = literal.utf8Start
        for offset in 0..<count where bytes[index + offset] != start[offset] {
            index += offset
            throw error(.unexpectedCharacter)
        }
        index += count
    }

    mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maximumDepth else { throw error(.tooDeep) }
        index += 1
        skipWhitespace()
        if try peek() == UInt8(ascii: "}") {
            index += 1
            return .object([:])
        }
        let start = pendingFields.count
        while true {
            skipWhitespace()
            guard try peek() == UInt8(ascii: "\"") else { throw error(.unexpectedCharacter) }
            let key = try parseString()
            skipWhitespace()
            guard try peek() == UInt8(ascii: ":") else { throw error(.unexpectedCharacter) }
            index += 1
            skipWhitespace()
            let value = try parseValue(depth: depth)
            pendingFields.append((key, value))
            skipWhitespace()
            switch try peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                // A repeated key keeps its last value, as assigning them in order does.
                var fields = [String: JSONValue](minimumCapacity: pendingFields.count - start)
                for field in pendingFields[start...] { fields[field.key] = field.value }
                pendingFields.removeSubrange(start...)
                return .object(fields)
            default: throw error(.unexpectedCharacter)
            }
        }
    }

    mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maximumDepth else { throw error(.tooDeep) }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if try peek() == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            switch try peek() {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"): index += 1; return .array(elements)
            default: throw error(.unexpectedCharacter)
            }
        }
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw error(.unexpectedEnd) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if isDigit(bytes[index]) {
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        } else {
            throw error(.invalidNumber)
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw error(.invalidNumber) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, isDigit(bytes[index]) else { throw error(.invalidNumber) }
            while index < bytes.count, isDigit(bytes[index]) { index += 1 }
        }
        let text = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if isInteger, let value = Int64(text) {
            return .int(value)
        }
        guard let value = Double(text), value.isFinite else {
            index = start
            throw error(.numberOutOfRange)
        }
        return .double(value)
    }

    func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    mutating func parseString() throws(JSONParseError) -> String {
        index += 1
        let start = index
        // Fast path: no escapes. ASCII text needs no UTF-8 validation, and decoding it from a
        // typed buffer stays specialized (validating a raw buffer goes through generic code).
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeRawBufferPointer(rebasing: bytes[start..<index])
                let string: String
                if ascii {
                    string = String(decoding: slice.assumingMemoryBound(to: UInt8.self), as: UTF8.self)
                } else {
                    guard let valid = String(validating: slice.assumingMemoryBound(to: UInt8.self), as: UTF8.self) else {
                        throw JSONParseError(reason: .invalidUTF8, offset: start)
                    }
                    string = valid
                }
                index += 1
                return string
            }
            if byte == UInt8(ascii: "\\") { break }
            if byte < 0x20 { throw error(.invalidString) }
            if byte >= 0x80 { ascii = false }
            index += 1
        }
        guard index < bytes.count else { throw error(.unexpectedEnd) }
        var buffer = Array(UnsafeRawBufferPointer(rebasing: bytes[start..<index]))
        while true {
            guard index < bytes.count else { throw error(.unexpectedEnd) }
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                index += 1
                guard let string = String(validating: buffer, as: UTF8.self) else {
                    throw JSONParseError(reason: .invalidUTF8, offset: start)
                }
                return string
            }
            if byte < 0x20 { throw error(.invalidString) }
            if byte != UInt8(ascii: "\\") {
                buffer.append(byte)
                index += 1
                continue
            }
            index += 1
            guard index < bytes.count else { throw error(.unexpectedEnd) }
            let escape = bytes[index]
            index += 1
            switch escape {
            case UInt8(ascii: "\""): buffer.append(0x22)
            case UInt8(ascii: "\\"): buffer.append(0x5C)
            case UInt8(ascii: "/"): buffer.append(0x2F)
            case UInt8(ascii: "b"): buffer.append(0x08)
            case UInt8(ascii: "f"): buffer.append(0x0C)
            case UInt8(ascii: "n"): buffer.append(0x0A)
            case UInt8(ascii: "r"): buffer.append(0x0D)
            case UInt8(ascii: "t"): buffer.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try parseHex4()
                if (0xD800..<0xDC00).contains(scalar) {
                    guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                    else { throw error(.invalidEscape) }
                    index += 2
                    let low = try parseHex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw error(.invalidEscape) }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00..<0xE000).contains(scalar) {
                    throw error(.invalidEscape)
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw error(.invalidEscape) }
                buffer.append(contentsOf: Array(String(Character(unicode)).utf8))
            default:
                throw error(.invalidEscape)
            }
        }
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw error(.unexpectedEnd) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw error(.invalidEscape)
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }
}
