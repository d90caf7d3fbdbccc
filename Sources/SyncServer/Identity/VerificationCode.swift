/// Email verification codes: eight characters of an alphabet without look-alikes (40 bits),
/// shown in two groups (`K7QM-4XPA`); read back whatever their case, spaces or dashes.
enum VerificationCode {
    static let alphabet = Array("ABCDEFGHJKLMNPQRSTUVWXYZ23456789")

    /// A new code, from the system's secure random source.
    static func make() -> String {
        var generator = SystemRandomNumberGenerator()
        return String((0..<8).map { _ in alphabet.randomElement(using: &generator)! })
    }

    /// `K7QM-4XPA` for `K7QM4XPA`.
    static func display(_ code: String) -> String {
        String(code.prefix(4)) + "-" + String(code.dropFirst(4))
    }

    /// What a person typed, as stored: upper case, without spaces and dashes; `nil` when it
    /// cannot be a code (so it does not count as a guess).
    static func normalized(_ typed: String) -> String? {
        let code = String(typed.uppercased().filter { $0 != "-" && !$0.isWhitespace })
        guard code.count == 8, code.allSatisfy(alphabet.contains) else { return nil }
        return code
    }
}
