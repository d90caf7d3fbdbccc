import SyncImport
import Testing

/// Decimal128 from the BSON Decimal128 specification and IEEE 754-2008 (binary integer
/// decimal): the bits and the canonical text of each value, worked out by hand.
@Suite("Decimal128")
struct Decimal128Tests {
    /// (high, low, canonical text): what 16 bytes mean.
    static let encodings: [(UInt64, UInt64, String)] = [
        (0x3040_0000_0000_0000, 0, "0"),
        (0xB040_0000_0000_0000, 0, "-0"),
        (0x3040_0000_0000_0000, 1, "1"),
        (0xB040_0000_0000_0000, 1, "-1"),
        (0x303E_0000_0000_0000, 1, "0.1"),
        (0x303C_0000_0000_0000, 1270, "12.70"),
        (0x3046_0000_0000_0000, 1, "1E+3"),
        (0x3046_0000_0000_0000, 100, "1.00E+5"),
        (0xB046_0000_0000_0000, 0, "-0E+3"),
        (0x302E_0000_0000_0000, 1234, "0.000001234"),
        (0x302C_0000_0000_0000, 1234, "1.234E-7"),
        (0xB03A_0000_0000_0000, 15, "-0.015"),
        (0x0000_0000_0000_0000, 1, "1E-6176"),
        (0x0000_0000_0000_0000, 0, "0E-6176"),
        (0x5FFE_0000_0000_0000, 0, "0E+6111"),
        // The largest finite value: 34 nines at the largest exponent.
        (0x5FFF_ED09_BEAD_87C0, 0x378D_8E63_FFFF_FFFF, "9.999999999999999999999999999999999E+6144"),
        (0x5FFE_314D_C644_8D93, 0x38C1_5B0A_0000_0000, "1.000000000000000000000000000000000E+6144"),
        (0x7C00_0000_0000_0000, 0, "NaN"),
        (0xFC00_0000_0000_0000, 0, "NaN"),
        (0x7E00_0000_0000_0000, 0, "NaN"),
        (0x7C00_0000_0000_0000, 12, "NaN"),
        (0x7800_0000_0000_0000, 0, "Infinity"),
        (0xF800_0000_0000_0000, 0, "-Infinity"),
        // Non-canonical: a coefficient of 10^34 (one past 34 digits) is zero …
        (0x3041_ED09_BEAD_87C0, 0x378D_8E64_0000_0000, "0"),
        // … and so is any with the "11" combination field's implied 100 prefix.
        (0x6C10_0000_0000_0000, 5, "0"),
    ]

    @Test("bits to canonical text", arguments: encodings)
    func text(high: UInt64, low: UInt64, text: String) {
        #expect(Decimal128(low: low, high: high).description == text)
    }

    @Test("bytes are little-endian, the low half first")
    func bytes() {
        let value = Decimal128(low: 0x0102_0304_0506_0708, high: 0x3040_0000_0000_0000)
        #expect(value.bytes == [8, 7, 6, 5, 4, 3, 2, 1, 0, 0, 0, 0, 0, 0, 0x40, 0x30])
        #expect(Decimal128(bytes: value.bytes) == value)
        #expect(Decimal128(bytes: [0, 1]) == nil)
    }

    /// (text read, canonical text written): the numeric strings of the specification.
    static let readings: [(String, String)] = [
        ("0", "0"), ("-0", "-0"), ("1.0", "1.0"), ("12.70", "12.70"), ("+0.003", "0.003"), ("017.", "17"),
        (".5", "0.5"), ("4E+9", "4E+9"), ("0.73e-7", "7.3E-8"), ("-1.5E-2", "-0.015"), ("1.00E+5", "1.00E+5"),
        ("Inf", "Infinity"), ("-infinity", "-Infinity"), ("NaN", "NaN"), ("-NaN", "NaN"), ("nan", "NaN"),
        // Clamping: a large exponent takes zeros into the coefficient; zeros clamp freely.
        ("1E+6144", "1.000000000000000000000000000000000E+6144"), ("0E+999999", "0E+6111"), ("0E-999999", "0E-6176"),
        // Exact rounding: 35 digits whose last is 0.
        ("10000000000000000000000000000000000", "1.000000000000000000000000000000000E+34"),
        ("1234567890123456789012345678901234", "1234567890123456789012345678901234"),
        ("9.999999999999999999999999999999999E+6144", "9.999999999999999999999999999999999E+6144"),
        ("1E-6176", "1E-6176"),
    ]

    @Test("text to value and back to its canonical text", arguments: readings)
    func reading(text: String, canonical: String) throws {
        let value = try #require(Decimal128(text))
        #expect(value.description == canonical)
    }

    @Test("refused: what is no numeric string, and what Decimal128 cannot hold exactly", arguments: [
        "", ".", "+", "-", "1e", "1e+", "1.2.3", "abc", "1 ", " 1", "E5", "0x10", "1,5", "Infinit", "NaN1",
        "12345678901234567890123456789012345", "1E-6177", "1E+6145", "1E+99999999999999999999",
    ])
    func refused(text: String) {
        #expect(Decimal128(text) == nil)
    }
}
