import Foundation

extension JSONValue {
    /// Encodes a `Codable` value (dates as ISO 8601 with milliseconds, `Data` as base64).
    public init(encoding value: some Encodable) throws {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(JSONValue.iso8601(date))
        }
        let data = try encoder.encode(value)
        self = try JSONParser(maximumDepth: 512).parse(Array(data))
    }

    /// Decodes a `Codable` value from this JSON (dates as ISO 8601, with or without fractions).
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = JSONValue.date(fromISO8601: text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 date: \(text)")
            }
            return date
        }
        return try decoder.decode(T.self, from: Data(jsonBytes))
    }

    /// A date as ISO 8601 in UTC with milliseconds, to the nearest: `2026-11-22T10:00:00.000Z`.
    /// A date read back from that text writes the same text again, so a model decoded and
    /// encoded again keeps its dates (the formatter truncates, and a parsed `…:40.027Z` is
    /// often a hair below 40.027 s: formatting the middle of the millisecond keeps it 027).
    public static func iso8601(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        let middle = Date(timeIntervalSince1970: (milliseconds + 0.5) / 1000)
        return middle.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true).timeZone(separator: .omitted))
    }

    /// Reads an ISO 8601 date with or without fractional seconds.
    public static func date(fromISO8601 text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true)) { return date }
        return try? Date(text, strategy: .iso8601)
    }
}
