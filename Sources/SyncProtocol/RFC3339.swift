import Foundation

/// The one reader and writer of dates in the protocol: RFC 3339 date-times
/// (`2026-11-25T12:00:00.000Z`, `2026-11-25T13:00:00+01:00`), read strictly wherever a date
/// enters (expiry, models, validators, import) and written in UTC with milliseconds.
///
/// What is read: `YYYY-MM-DDTHH:MM:SS`, an optional fraction of 1 to 9 digits after a `.`,
/// and a zone, `Z` or `+HH:MM`/`-HH:MM`, which is honoured. Refused: anything else, and
/// anything after; a lowercase `t` or `z`; a comma before the fraction; a day the month does
/// not have (`2001-02-30`); hours past 23, minutes and seconds past 59 (a leap second is
/// refused: no clock the server reads counts one); offsets past 23:59 or with seconds; years
/// 0000 and past 9999.
public enum RFC3339 {
    /// The instant `text` names, or `nil` when it is not a strict RFC 3339 date-time.
    public static func date(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { parse($0) }
    }

    /// `date` in UTC with milliseconds, rounded to the nearest: `2026-11-22T10:00:00.000Z`.
    /// The text read back with ``date(_:)`` and written again is the same text. Years outside
    /// 0001–9999 are written with their sign and all their digits (and are not read back).
    public static func string(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let (days, inDay) = floorDivide(milliseconds, 86_400_000)
        let (year, month, day) = civil(fromDays: days)
        let hour = inDay / 3_600_000
        let minute = inDay / 60_000 % 60
        let second = inDay / 1000 % 60
        let fraction = inDay % 1000
        // Written byte by byte: text built of a dozen small strings cost an import of dates
        // 3 % of its time.
        var bytes: [UInt8] = []
        bytes.reserveCapacity(24)
        if year < 0 {
            bytes.append(UInt8(ascii: "-"))
            append(-year, width: 4, to: &bytes)
        } else if year > 9999 {
            bytes.append(UInt8(ascii: "+"))
            append(year, width: 1, to: &bytes)
        } else {
            append(year, width: 4, to: &bytes)
        }
        append("-", month, width: 2, to: &bytes)
        append("-", day, width: 2, to: &bytes)
        append("T", hour, width: 2, to: &bytes)
        append(":", minute, width: 2, to: &bytes)
        append(":", second, width: 2, to: &bytes)
        append(".", fraction, width: 3, to: &bytes)
        bytes.append(UInt8(ascii: "Z"))
        return String(decoding: bytes, as: UTF8.self)
    }

    // MARK: Reading

    private static func parse(_ bytes: UnsafeBufferPointer<UInt8>) -> Date? {
        // The shortest is 20 bytes (`…:SSZ`), the longest 35 (nine fraction digits and an offset).
        guard bytes.count >= 20, bytes.count <= 35 else { return nil }
        var index = bytes.startIndex
        func digits(_ count: Int) -> Int64? {
            var value: Int64 = 0
            for _ in 0..<count {
                guard index < bytes.endIndex else { return nil }
                let byte = bytes[index]
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int64(byte - UInt8(ascii: "0"))
                index += 1
            }
            return value
        }
        func expect(_ character: Character) -> Bool {
            guard index < bytes.endIndex, bytes[index] == character.asciiValue! else { return false }
            index += 1
            return true
        }
        guard let year = digits(4), expect("-"), let month = digits(2), expect("-"), let day = digits(2),
            expect("T"), let hour = digits(2), expect(":"), let minute = digits(2), expect(":"), let second = digits(2)
        else { return nil }
        guard year >= 1, (1...12).contains(month), day >= 1, day <= daysIn(month: month, of: year),
            hour <= 23, minute <= 59, second <= 59
        else { return nil }
        var fraction = 0.0
        if index < bytes.endIndex, bytes[index] == UInt8(ascii: ".") {
            index += 1
            var value: Int64 = 0
            var count = 0
            while index < bytes.endIndex, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                value = value * 10 + Int64(bytes[index] - UInt8(ascii: "0"))
                count += 1
                index += 1
            }
            guard (1...9).contains(count) else { return nil }
            fraction = Double(value) / pow(10, Double(count))
        }
        guard index < bytes.endIndex else { return nil }
        var offset: Int64 = 0
        switch bytes[index] {
        case UInt8(ascii: "Z"):
            index += 1
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let hours = digits(2), expect(":"), let minutes = digits(2), hours <= 23, minutes <= 59 else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        default:
            return nil
        }
        guard index == bytes.endIndex else { return nil }
        let seconds = days(fromYear: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second - offset
        return Date(timeIntervalSince1970: Double(seconds) + fraction)
    }

    private static func isLeap(_ year: Int64) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    private static func daysIn(month: Int64, of year: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    // MARK: The proleptic Gregorian calendar, as days since 1970-01-01

    /// Days from 1970-01-01 to the given date (negative before it).
    static func days(fromYear year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDivide(y, 400).quotient
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01.
    static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let shifted = days + 719_468
        let era = floorDivide(shifted, 146_097).quotient
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shiftedMonth = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shiftedMonth + 2) / 5 + 1
        let month = shiftedMonth < 10 ? shiftedMonth + 3 : shiftedMonth - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    private static func floorDivide(_ value: Int64, _ divisor: Int64) -> (quotient: Int64, remainder: Int64) {
        let quotient = value >= 0 ? value / divisor : -((-value + divisor - 1) / divisor)
        return (quotient, value - quotient * divisor)
    }

    /// `separator`, then `value`'s digits as ``append(_:width:to:)`` writes them.
    private static func append(_ separator: Unicode.Scalar, _ value: Int64, width: Int, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: separator))
        append(value, width: width, to: &bytes)
    }

    /// The decimal digits of `value` (not negative), at least `width` of them (zeros in front).
    private static func append(_ value: Int64, width: Int, to bytes: inout [UInt8]) {
        var digits = 1
        var bound: Int64 = 10
        while digits < 19, value >= bound {
            digits += 1
            bound *= 10
        }
        let start = bytes.count
        let count = max(width, digits)
        bytes.append(contentsOf: repeatElement(UInt8(ascii: "0"), count: count))
        var rest = value
        var index = start + count - 1
        while rest > 0 {
            bytes[index] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
            index -= 1
        }
    }
}
