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
        switch self {
        case .null:
            output.append(contentsOf: "null".utf8)
        case .bool(let value):
            output.append(contentsOf: (value ? "true" : "false").utf8)
        case .int(let value):
            output.append(contentsOf: String(value).utf8)
        case .double(let value):
            Self.write(double: value, to: &output)
        case .string(let value):
            Self.write(string: value, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { output.append(UInt8(ascii: ",")) }
                element.write(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let fields):
            output.append(UInt8(ascii: "{"))
            for (offset, key) in fields.keys.sorted().enumerated() {
                if offset > 0 { output.append(UInt8(ascii: ",")) }
                Self.write(string: key, to: &output)
                output.append(UInt8(ascii: ":"))
                fields[key]!.write(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private static func write(double: Double, to output: inout [UInt8]) {
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

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private static func write(string: String, to output: inout [UInt8]) {
        output.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): output.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: output.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                output.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30])
                output.append(hexDigits[Int(byte >> 4)])
                output.append(hexDigits[Int(byte & 0x0F)])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}

extension JSONValue: CustomStringConvertible {
    public var description: String { jsonString }
}
