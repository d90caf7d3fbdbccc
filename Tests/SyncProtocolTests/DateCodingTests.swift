import Foundation
import SyncProtocol
import Testing

/// Dates in JSON bodies: ISO 8601 with milliseconds.
@Suite("Dates in JSON")
struct DateCodingTests {
    struct Stamped: Codable, Equatable {
        var at: Date
    }

    @Test("a date read back from its text writes the same text again: a model decoded and put again keeps its dates")
    func stableText() throws {
        // A sweep of instants with every kind of fraction: about half of them used to come
        // back a millisecond earlier (the formatter truncates, and the parsed value is often a
        // hair below the millisecond it names).
        var drifted: [String] = []
        for step in 0..<2_000 {
            let date = Date(timeIntervalSince1970: 1_795_000_000 + Double(step) * 0.0137 + 0.000_123_4)
            let text = try JSONValue(encoding: Stamped(at: date))
            let again = try JSONValue(encoding: try text.decode(Stamped.self))
            if again != text { drifted.append("\(text) → \(again)") }
        }
        #expect(drifted.isEmpty, "\(drifted.count) dates drifted, e.g. \(drifted.prefix(3))")
    }

    @Test("dates are written to the nearest millisecond, in UTC")
    func nearestMillisecond() {
        #expect(JSONValue.iso8601(Date(timeIntervalSince1970: 1.0006)) == "1970-01-01T00:00:01.001Z")
        #expect(JSONValue.iso8601(Date(timeIntervalSince1970: 1.0004)) == "1970-01-01T00:00:01.000Z")
        #expect(JSONValue.iso8601(Date(timeIntervalSince1970: 59.9996)) == "1970-01-01T00:01:00.000Z")
        #expect(JSONValue.iso8601(Date(timeIntervalSince1970: -0.25)) == "1969-12-31T23:59:59.750Z")
    }
}
