/// What a bulk reader needs of a `changes` message — how many objects it carries, whether it
/// is up to date — found by walking its top-level fields and skipping over their values, not
/// by parsing the values.
///
/// The bootstrap scenario's client uses it: the floor beside it reads the same rows as text
/// without parsing their bodies, so the client takes each frame apart only as far as needed to
/// count what arrived. Strings (with their escapes) and nesting are followed, so a body holding
/// brackets or field names is counted right; scalars are skipped without being checked.
struct ChangesScan: Equatable {
    var type: String?
    var objects = 0
    var upToDate = false

    /// Scans one message; `nil` when it is not a JSON object of this shape.
    init?(_ bytes: UnsafeRawBufferPointer) {
        var walker = Walker(bytes: bytes)
        do {
            try walker.expect(UInt8(ascii: "{"))
            if try walker.peek() == UInt8(ascii: "}") { return }
            repeat {
                let key = try walker.string()
                try walker.expect(UInt8(ascii: ":"))
                switch key {
                case "objects":
                    try walker.expect(UInt8(ascii: "["))
                    if try walker.peek() == UInt8(ascii: "]") {
                        walker.index += 1
                    } else {
                        repeat {
                            try walker.skipValue()
                            objects += 1
                        } while try walker.next(after: UInt8(ascii: "]"))
                    }
                case "upToDate":
                    upToDate = try walker.peek() == UInt8(ascii: "t")
                    try walker.skipValue()
                case "type":
                    type = try walker.string()
                default:
                    try walker.skipValue()
                }
            } while try walker.next(after: UInt8(ascii: "}"))
        } catch {
            return nil
        }
    }

    private struct Malformed: Error {}

    private struct Walker {
        let bytes: UnsafeRawBufferPointer
        var index = 0

        mutating func skipBlanks() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x0A || bytes[index] == 0x0D || bytes[index] == 0x09 {
                index += 1
            }
        }

        mutating func peek() throws -> UInt8 {
            skipBlanks()
            guard index < bytes.count else { throw Malformed() }
            return bytes[index]
        }

        mutating func expect(_ byte: UInt8) throws {
            guard try peek() == byte else { throw Malformed() }
            index += 1
        }

        /// After a member: `true` at a `,` (another follows), `false` at `closing`.
        mutating func next(after closing: UInt8) throws -> Bool {
            let byte = try peek()
            index += 1
            if byte == UInt8(ascii: ",") { return true }
            guard byte == closing else { throw Malformed() }
            return false
        }

        mutating func string() throws -> String {
            try expect(UInt8(ascii: "\""))
            let start = index
            try skipStringRest()
            return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<(index - 1)]), as: UTF8.self)
        }

        /// Past the closing quote of a string whose opening quote was read.
        mutating func skipStringRest() throws {
            while index < bytes.count {
                let byte = bytes[index]
                index += 1
                if byte == UInt8(ascii: "\\") {
                    index += 1
                } else if byte == UInt8(ascii: "\"") {
                    return
                }
            }
            throw Malformed()
        }

        /// Past one value of any kind.
        mutating func skipValue() throws {
            switch try peek() {
            case UInt8(ascii: "\""):
                index += 1
                try skipStringRest()
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                repeat {
                    let byte = bytes[index]
                    index += 1
                    switch byte {
                    case UInt8(ascii: "\""): try skipStringRest()
                    case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"): depth -= 1
                    default: break
                    }
                } while depth > 0 && index < bytes.count
                guard depth == 0 else { throw Malformed() }
            default:
                // A number or a literal: up to the next delimiter.
                while index < bytes.count, ![UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]")].contains(bytes[index]) {
                    index += 1
                }
            }
        }
    }
}
