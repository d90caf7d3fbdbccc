/// Splits a SQL script into its statements, so a migration file with many statements can
/// run through postgres-nio, whose extended query protocol takes one statement at a time.
///
/// Semicolons inside string literals, quoted identifiers, comments and dollar-quoted bodies
/// (`$$ … $$`, `$fn$ … $fn$`) do not split.
struct SQLScript: Sendable {
    let statements: [String]

    init(_ text: String) {
        let bytes = Array(text.utf8)
        var statements: [String] = []
        var start = 0
        var index = 0

        func flush(upTo end: Int) {
            let statement = String(decoding: bytes[start..<end], as: UTF8.self)
            if Self.hasCode(statement) {
                statements.append(statement.trimmingWhitespace())
            }
        }

        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "'"), UInt8(ascii: "\""):
                index += 1
                while index < bytes.count {
                    if bytes[index] == byte {
                        // A doubled quote is an escaped quote.
                        if index + 1 < bytes.count, bytes[index + 1] == byte {
                            index += 2
                            continue
                        }
                        break
                    }
                    index += 1
                }
                index += 1
            case UInt8(ascii: "-") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "-"):
                while index < bytes.count, bytes[index] != 0x0A { index += 1 }
            case UInt8(ascii: "/") where index + 1 < bytes.count && bytes[index + 1] == UInt8(ascii: "*"):
                index += 2
                while index + 1 < bytes.count, !(bytes[index] == UInt8(ascii: "*") && bytes[index + 1] == UInt8(ascii: "/")) {
                    index += 1
                }
                index += 2
            case UInt8(ascii: "$"):
                if let tagEnd = Self.dollarTagEnd(bytes, from: index) {
                    let tag = bytes[index...tagEnd]
                    index = tagEnd + 1
                    while index < bytes.count {
                        if bytes[index] == UInt8(ascii: "$"), index + tag.count <= bytes.count,
                            bytes[index..<(index + tag.count)].elementsEqual(tag)
                        {
                            index += tag.count
                            break
                        }
                        index += 1
                    }
                } else {
                    index += 1
                }
            case UInt8(ascii: ";"):
                flush(upTo: index)
                index += 1
                start = index
            default:
                index += 1
            }
        }
        if start < bytes.count { flush(upTo: bytes.count) }
        self.statements = statements
    }

    /// The index of the closing `$` of a dollar-quote tag starting at `start`, if one starts there.
    private static func dollarTagEnd(_ bytes: [UInt8], from start: Int) -> Int? {
        var index = start + 1
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "$") { return index }
            let isTagCharacter = byte == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (index > start + 1 && (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte))
            guard isTagCharacter else { return nil }
            index += 1
        }
        return nil
    }

    /// Whether a piece of script holds anything but whitespace and comments.
    private static func hasCode(_ text: String) -> Bool {
        for line in text.split(separator: "\n") {
            let trimmed = line.drop(while: { $0 == " " || $0 == "\t" || $0 == "\r" })
            if !trimmed.isEmpty, !trimmed.hasPrefix("--") { return true }
        }
        return false
    }
}

extension String {
    func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}
