/// The canonical text of a UUID (RFC 4122, section 3): 8-4-4-4-12 lowercase hexadecimal
/// digits, and back.
enum UUIDText {
    static func string(_ bytes: [UInt8]) -> String {
        precondition(bytes.count == 16)
        let hex = Array(HexText.string(bytes).utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (offset, digit) in hex.enumerated() {
            if offset == 8 || offset == 12 || offset == 16 || offset == 20 { text.append(UInt8(ascii: "-")) }
            text.append(digit)
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The 16 bytes of `8-4-4-4-12` hexadecimal text (either case), or of 32 digits without
    /// hyphens; else `nil`.
    static func bytes(_ text: String) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        let digits: [UInt8]
        if utf8.count == 36 {
            guard [8, 13, 18, 23].allSatisfy({ utf8[$0] == UInt8(ascii: "-") }) else { return nil }
            digits = utf8.enumerated().filter { ![8, 13, 18, 23].contains($0.offset) }.map(\.element)
        } else if utf8.count == 32 {
            digits = utf8
        } else {
            return nil
        }
        guard let bytes = HexText.bytes(String(decoding: digits, as: UTF8.self)), bytes.count == 16 else { return nil }
        return bytes
    }
}
