import Foundation
import SyncProtocol

/// BSON dates (milliseconds since the Unix epoch, UTC) and their RFC 3339 text, through the
/// protocol's one date reader and writer (`RFC3339`).
enum BSONDateTime {
    /// 0001-01-01T00:00:00.000Z
    static let earliest: Int64 = -62_135_596_800_000
    /// 9999-12-31T23:59:59.999Z
    static let latest: Int64 = 253_402_300_799_999
    /// 1970-01-01T00:00:00.000Z … 9999-12-31T23:59:59.999Z: where relaxed Extended JSON writes
    /// a date as text.
    static let relaxedRange: ClosedRange<Int64> = 0...latest

    /// `2026-11-25T12:00:00.000Z`; `nil` outside years 0001–9999.
    static func rfc3339(_ milliseconds: Int64) -> String? {
        guard (earliest...latest).contains(milliseconds) else { return nil }
        // Exact: a millisecond count below 2^53 survives the division and the writer's rounding.
        return RFC3339.string(Date(timeIntervalSince1970: Double(milliseconds) / 1000))
    }

    /// The milliseconds of an RFC 3339 date-time with at most three fraction digits (BSON holds
    /// no finer time); `nil` for anything else.
    static func milliseconds(rfc3339 text: String) -> Int64? {
        // On the bytes, not the characters: every date of an export is read here.
        let bytes = text.utf8
        if let point = bytes.firstIndex(of: UInt8(ascii: ".")) {
            let fraction = bytes[bytes.index(after: point)...].prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            guard fraction.count <= 3 else { return nil }
        }
        guard let date = RFC3339.date(text) else { return nil }
        return Int64((date.timeIntervalSince1970 * 1000).rounded())
    }
}
