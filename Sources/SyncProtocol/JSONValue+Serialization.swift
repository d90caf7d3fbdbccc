extension JSONValue {
    /// The value as compact JSON text with object keys sorted, so equal values always
    /// serialize to the same bytes.
    public var jsonBytes: [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(64)
        write(to: &output)
        return output
    }

    /// The value as compact JSON text with object keys sorted.
    public var jsonString: String {
        String(decoding: jsonBytes, as: UTF8.self)
    }

    /// Appends the compact JSON text of this value to `output`.
    public func write(to output: inout [UInt8]) {
        var writer = JSONWriter(output: output)
        output = []
        writer.write(self, depth: 0)
        output = writer.output
    }
}

/// Writes compact JSON (object keys in UTF-8 byte order), measuring as it goes what the
/// limits check: how deep the value nests and whether a string holds U+0000. One pass over
/// the value, runs of plain string bytes copied at once.
struct JSONWriter {
    var output: [UInt8]
    /// The deepest nesting of arrays and objects seen (the outermost one is 1).
    private(set) var depth = 0
    /// Whether a string or key held U+0000 (written escaped).
    private(set) var sawNUL = false
    /// Whether an object had a `@blob` field (``BlobReference``).
    private(set) var sawBlobField = false

    init(output: [UInt8] = []) {
        self.output = output
    }

    mutating func write(_ value: JSONValue, depth level: Int) {
        switch value {
        case .null:
            output.append(contentsOf: "null".utf8)
        case .bool(let value):
            output.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value):
            write(int: value)
        case .double(let value):
            write(double: value)
        case .string(let value):
            write(string: value)
        case .array(let elements):
            depth = max(depth, level + 1)
            output.append(UInt8(ascii: "["))
            var first = true
            for element in elements {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                write(element, depth: level + 1)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let fields):
            depth = max(depth, level + 1)
            if fields[BlobReference.field] != nil { sawBlobField = true }
            output.append(UInt8(ascii: "{"))
            var first = true
            for (key, field) in fields.sorted(by: { $0.key.utf8Precedes($1.key) }) {
                if !first { output.append(UInt8(ascii: ",")) }
                first = false
                write(string: key)
                output.append(UInt8(ascii: ":"))
                write(field, depth: level + 1)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private mutating func write(int value: Int64) {
        JSONText.appendInteger(value, to: &output)
    }

    private mutating func write(double: Double) {
        guard double.isFinite else {
            // JSON has no infinities or NaN; the operations never produce them, but a value
            // built in code might.
            output.append(contentsOf: "null".utf8)
            return
        }
        if double == double.rounded(), abs(double) < 1e15 {
            // Keep the fraction so the value reads back as a double, not an integer.
            output.append(contentsOf: String(Int64(double)).utf8)
            output.append(contentsOf: ".0".utf8)
        } else {
            output.append(contentsOf: "\(double)".utf8)
        }
    }

    private mutating func write(string: String) {
        var string = string
        if string.withUTF8({ JSONText.appendString(utf8: UnsafeRawBufferPointer($0), to: &output) }) { sawNUL = true }
    }
}

extension JSONText {
    private static let hexDigits = Array("0123456789abcdef".utf8)

    /// Appends `utf8` as a JSON string: quoted, with `"`, `\` and control characters
    /// escaped, runs of plain bytes copied at once. Returns whether it held U+0000.
    @discardableResult
    public static func appendString(utf8 bytes: UnsafeRawBufferPointer, to output: inout [UInt8]) -> Bool {
        var sawNUL = false
        output.append(UInt8(ascii: "\""))
        var runStart = 0
        for index in 0..<bytes.count {
            let byte = bytes[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            if runStart < index { output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[runStart..<index])) }
            runStart = index + 1
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): output.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: output.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            default:
                if byte == 0 { sawNUL = true }
                output.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30])
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0F)])
            }
        }
        if runStart < bytes.count { output.append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[runStart..<bytes.count])) }
        output.append(UInt8(ascii: "\""))
        return sawNUL
    }
}

extension JSONValue {
    /// Writes `write(string:)` for callers outside the writer (encoded change batches).
    static func write(string: String, to output: inout [UInt8]) {
        var writer = JSONWriter(output: output)
        output = []
        writer.write(.string(string), depth: 0)
        output = writer.output
    }
}

extension JSONValue: CustomStringConvertible {
    public var description: String { jsonString }
}
