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

    /// Decodes a `Codable` value from this JSON (dates as strict RFC 3339, ``RFC3339``).
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = RFC3339.date(text) else {
                throw DecodingError.dataCorruptedError(
                    in: container, debugDescription: "not an RFC 3339 date-time such as 2026-11-25T12:00:00.000Z: \(text)")
            }
            return date
        }
        return try decoder.decode(T.self, from: Data(jsonBytes))
    }

    /// A date as RFC 3339 in UTC with milliseconds, to the nearest: `2026-11-22T10:00:00.000Z`
    /// (``RFC3339/string(_:)``).
    public static func iso8601(_ date: Date) -> String {
        RFC3339.string(date)
    }
}
