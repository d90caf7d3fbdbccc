import Foundation
import SyncProtocol
import SyncTesting
import Testing

/// The one strict reader of dates (issue 29, finding 3): every loose string that was acked and
/// never expired, each beside its correct twin.
@Suite("RFC 3339 dates")
struct RFC3339Tests {
    @Test("a loose string is refused, and its correct twin is read", arguments: RFC3339Vectors.refused)
    func refusedWithTwin(_ pair: (text: String, twin: String)) {
        #expect(RFC3339.date(pair.text) == nil, "read \(pair.text)")
        #expect(RFC3339.date(pair.twin) != nil, "refused \(pair.twin)")
    }

    @Test("a loose @expiresAt is validation_failed; its twin is accepted", arguments: RFC3339Vectors.refused)
    func expiryRefused(_ pair: (text: String, twin: String)) throws {
        #expect(throws: SyncError.self) { try ObjectExpiry.date(of: [ObjectExpiry.field: .string(pair.text)]) }
        #expect(try ObjectExpiry.date(of: [ObjectExpiry.field: .string(pair.twin)]) != nil)
    }

    @Test("the zone is honoured and the instant exact", arguments: RFC3339Vectors.instants)
    func instant(_ pair: (text: String, seconds: Double)) throws {
        let date = try #require(RFC3339.date(pair.text))
        #expect(abs(date.timeIntervalSince1970 - pair.seconds) < 0.000_001, "\(pair.text) read as \(date.timeIntervalSince1970)")
    }

    @Test("dates are written in UTC with milliseconds and read back to the same text, across the calendar")
    func roundTrip() throws {
        // Every 97th day from year 1 to 9999 (leap years, century years, before 1970), at a
        // moment with milliseconds.
        var day: Int64 = -719_162
        while day < 2_932_896 {
            let date = Date(timeIntervalSince1970: Double(day) * 86_400 + 45_296.789)
            let text = RFC3339.string(date)
            let back = try #require(RFC3339.date(text), "not read back: \(text)")
            #expect(RFC3339.string(back) == text)
            day += 97
        }
        #expect(RFC3339.string(Date(timeIntervalSince1970: 1_795_608_000)) == "2026-11-25T12:00:00.000Z")
        #expect(RFC3339.string(Date(timeIntervalSince1970: -62_135_596_800)) == "0001-01-01T00:00:00.000Z")
        // Outside years 1–9999 (a BSON date may be): the sign and every digit.
        #expect(RFC3339.string(Date(timeIntervalSince1970: -62_167_219_200)) == "0000-01-01T00:00:00.000Z")
        #expect(RFC3339.string(Date(timeIntervalSince1970: -62_198_755_200)) == "-0001-01-01T00:00:00.000Z")
        #expect(RFC3339.string(Date(timeIntervalSince1970: 253_402_300_800.007)) == "+10000-01-01T00:00:00.007Z")
        #expect(RFC3339.string(Date(timeIntervalSince1970: 1_234.5678)) == "1970-01-01T00:20:34.568Z")
    }

    struct Stamped: Codable, Equatable {
        var at: Date
    }

    @Test("a model's date is read by the same strict reader", arguments: ["2001-02-30T00:00:00Z", "2026-11-25T12:00:00", "2026-11-25T12:00:00Zjunk"])
    func modelDates(_ text: String) throws {
        let body: JSONValue = ["at": .string(text)]
        #expect(throws: DecodingError.self) { try body.decode(Stamped.self) }
        let offset: JSONValue = ["at": "2026-11-25T13:00:00+01:00"]
        #expect(try offset.decode(Stamped.self).at == Date(timeIntervalSince1970: 1_795_608_000))
    }
}
