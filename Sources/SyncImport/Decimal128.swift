/// A BSON Decimal128: an IEEE 754-2008 128-bit decimal floating point number in the binary
/// integer decimal (BID) encoding, as the BSON Decimal128 specification describes it.
///
/// Read from its 16 bytes or from its text (`$numberDecimal`); written as its canonical text
/// (``description``), which is what the import stores: `"1234.5"`, `"-0"`, `"1.000E+6144"`,
/// `"NaN"`, `"Infinity"`.
public struct Decimal128: Hashable, Sendable, CustomStringConvertible {
    /// The low and high 64 bits (the bytes are their little-endian encoding, low first).
    public let low: UInt64
    public let high: UInt64

    /// The largest coefficient: 34 decimal digits.
    static let maximumCoefficient: UInt128 = 9_999_999_999_999_999_999_999_999_999_999_999
    static let exponentBias = 6176
    static let minimumExponent = -6176
    static let maximumExponent = 6111
    static let maximumDigits = 34

    public init(low: UInt64, high: UInt64) {
        self.low = low
        self.high = high
    }

    /// From its 16 bytes in BSON (little-endian) order.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        var low: UInt64 = 0
        var high: UInt64 = 0
        for (offset, byte) in bytes.enumerated() {
            if offset < 8 { low |= UInt64(byte) << (8 * offset) } else { high |= UInt64(byte) << (8 * (offset - 8)) }
        }
        self.init(low: low, high: high)
    }

    /// The 16 bytes in BSON (little-endian) order.
    public var bytes: [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: low >> (8 * $0)) } + (0..<8).map { UInt8(truncatingIfNeeded: high >> (8 * $0)) }
    }

    /// What the bits mean.
    public enum Value: Hashable, Sendable {
        case nan
        case infinity(negative: Bool)
        /// `(-1)^negative × coefficient × 10^exponent`.
        case finite(negative: Bool, coefficient: UInt128, exponent: Int)
    }

    public var value: Value {
        let negative = high >> 63 == 1
        let combination = (high >> 58) & 0x1F
        if combination == 0b11111 { return .nan }
        if combination == 0b11110 { return .infinity(negative: negative) }
        let biasedExponent: UInt64
        var coefficient: UInt128
        if (high >> 61) & 0b11 == 0b11 {
            // The coefficient has an implied `100` prefix: always more than 34 digits, so the
            // encoding is non-canonical and the value is zero (IEEE 754-2008, 3.5.2).
            biasedExponent = (high >> 47) & 0x3FFF
            coefficient = 0
        } else {
            biasedExponent = (high >> 49) & 0x3FFF
            coefficient = UInt128(high & 0x1_FFFF_FFFF_FFFF) << 64 | UInt128(low)
            if coefficient > Self.maximumCoefficient { coefficient = 0 }
        }
        return .finite(negative: negative, coefficient: coefficient, exponent: Int(biasedExponent) - Self.exponentBias)
    }

    static let nan = Decimal128(low: 0, high: 0x7C00_0000_0000_0000)

    static func infinity(negative: Bool) -> Decimal128 {
        Decimal128(low: 0, high: 0x7800_0000_0000_0000 | (negative ? 1 << 63 : 0))
    }

    /// A finite value; `coefficient` at most 34 digits, `exponent` within −6176…6111.
    static func finite(negative: Bool, coefficient: UInt128, exponent: Int) -> Decimal128 {
        let biased = UInt64(exponent + exponentBias)
        let high = (negative ? 1 << 63 : 0) | biased << 49 | UInt64(truncatingIfNeeded: coefficient >> 64)
        return Decimal128(low: UInt64(truncatingIfNeeded: coefficient), high: high)
    }

    // MARK: Text

    /// The canonical text (the specification's "to string" representation).
    public var description: String {
        switch value {
        case .nan:
            return "NaN"
        case .infinity(let negative):
            return negative ? "-Infinity" : "Infinity"
        case .finite(let negative, let coefficient, let exponent):
            let digits = String(coefficient)
            let adjusted = exponent + digits.count - 1
            var text = negative ? "-" : ""
            if exponent <= 0, adjusted >= -6 {
                if exponent == 0 {
                    text += digits
                } else {
                    let point = digits.count + exponent
                    if point > 0 {
                        text += digits.prefix(point) + "." + digits.dropFirst(point)
                    } else {
                        text += "0." + String(repeating: "0", count: -point) + digits
                    }
                }
            } else {
                text += digits.prefix(1)
                if digits.count > 1 { text += "." + digits.dropFirst() }
                text += "E" + (adjusted < 0 ? "-" : "+") + String(abs(adjusted))
            }
            return text
        }
    }

    /// Reads the specification's numeric strings (`"12.70"`, `"-0"`, `"4E+9"`, `".5"`,
    /// `"Inf"`, `"NaN"`). `nil` for anything else, and for a value the format cannot hold
    /// exactly (more than 34 significant digits, or an exponent out of range after clamping).
    public init?(_ text: String) {
        var bytes = Substring(text).utf8[...]
        var negative = false
        if let first = bytes.first, first == UInt8(ascii: "+") || first == UInt8(ascii: "-") {
            negative = first == UInt8(ascii: "-")
            bytes = bytes.dropFirst()
        }
        let word = String(decoding: bytes, as: UTF8.self).lowercased()
        if word == "inf" || word == "infinity" {
            self = .infinity(negative: negative)
            return
        }
        if word == "nan" {
            self = .nan
            return
        }
        var digits: [UInt8] = []
        var fractionDigits = 0
        var sawPoint = false
        while let byte = bytes.first, byte == UInt8(ascii: ".") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) {
            if byte == UInt8(ascii: ".") {
                guard !sawPoint else { return nil }
                sawPoint = true
            } else {
                digits.append(byte - UInt8(ascii: "0"))
                if sawPoint { fractionDigits += 1 }
            }
            bytes = bytes.dropFirst()
        }
        guard !digits.isEmpty else { return nil }
        var exponent = 0
        if let byte = bytes.first, byte == UInt8(ascii: "e") || byte == UInt8(ascii: "E") {
            bytes = bytes.dropFirst()
            var exponentNegative = false
            if let sign = bytes.first, sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-") {
                exponentNegative = sign == UInt8(ascii: "-")
                bytes = bytes.dropFirst()
            }
            guard !bytes.isEmpty else { return nil }
            for byte in bytes {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                // Past this the value is out of range whatever the digits; keep counting sanely.
                exponent = min(exponent * 10 + Int(byte - UInt8(ascii: "0")), 1_000_000)
            }
            if exponentNegative { exponent = -exponent }
            bytes = bytes[bytes.endIndex...]
        }
        guard bytes.isEmpty else { return nil }
        exponent -= fractionDigits
        // Significant digits only.
        var significant = digits.drop { $0 == 0 }
        if significant.isEmpty {
            // Zero: clamping the exponent changes nothing of the value.
            self = .finite(
                negative: negative, coefficient: 0,
                exponent: min(max(exponent, Self.minimumExponent), Self.maximumExponent))
            return
        }
        // More digits than fit: only trailing zeros may go (exact rounding).
        while significant.count > Self.maximumDigits, significant.last == 0 {
            significant = significant.dropLast()
            exponent += 1
        }
        guard significant.count <= Self.maximumDigits else { return nil }
        var coefficientDigits = Array(significant)
        // Clamping: an exponent too large takes zeros into the coefficient, one too small
        // gives trailing zeros back.
        while exponent > Self.maximumExponent, coefficientDigits.count < Self.maximumDigits {
            coefficientDigits.append(0)
            exponent -= 1
        }
        while exponent < Self.minimumExponent, coefficientDigits.last == 0 {
            coefficientDigits.removeLast()
            exponent += 1
        }
        guard exponent >= Self.minimumExponent, exponent <= Self.maximumExponent else { return nil }
        let coefficient = coefficientDigits.reduce(UInt128(0)) { $0 * 10 + UInt128($1) }
        self = .finite(negative: negative, coefficient: coefficient, exponent: exponent)
    }
}
