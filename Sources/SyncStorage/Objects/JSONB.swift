import NIOCore
import PostgresNIO
import SyncProtocol

/// A ``JSONValue`` carried to and from PostgreSQL as `jsonb`, with the engine's own parser
/// and serializer instead of Foundation's coders (exact integers, sorted keys, no detour
/// through `Codable`).
struct JSONB: Sendable, Hashable {
    var value: JSONValue
    /// The length of the JSON text it was read from (0 for one made here).
    var textBytes = 0

    init(value: JSONValue) {
        self.value = value
    }

    /// Equal by value, whatever text it was read from.
    static func == (lhs: JSONB, rhs: JSONB) -> Bool { lhs.value == rhs.value }
    func hash(into hasher: inout Hasher) { hasher.combine(value) }
}

/// Already-serialized JSON text sent as `jsonb`, so a body encoded once to check its size is
/// not encoded again for the database.
struct EncodedJSONB: Sendable, Hashable {
    var bytes: [UInt8]
}

extension JSONB: PostgresDecodable {
    init<JSONDecoder: PostgresJSONDecoder>(
        from buffer: inout ByteBuffer,
        type: PostgresDataType,
        format: PostgresFormat,
        context: PostgresDecodingContext<JSONDecoder>
    ) throws {
        switch (format, type) {
        case (.binary, .jsonb):
            guard buffer.readInteger(as: UInt8.self) == 1 else { throw PostgresDecodingError.Code.failure }
        case (.binary, .json), (.text, .jsonb), (.text, .json):
            break
        default:
            throw PostgresDecodingError.Code.typeMismatch
        }
        textBytes = buffer.readableBytes
        value = try Self.parseText(buffer)
        buffer.moveReaderIndex(to: buffer.writerIndex)
    }

    /// Calls `body` with the JSON text of a `jsonb` column read in binary format as raw
    /// bytes (`ByteBuffer`): its version byte checked and skipped.
    static func withText<Result>(of column: ByteBuffer, _ body: (UnsafeRawBufferPointer) throws -> Result) throws -> Result {
        try column.withUnsafeReadableBytes { bytes in
            guard bytes.first == 1 else { throw PostgresDecodingError.Code.failure }
            return try body(UnsafeRawBufferPointer(rebasing: bytes.dropFirst()))
        }
    }

    private static func parseText(_ buffer: ByteBuffer) throws -> JSONValue {
        // Stored bodies were checked against the limits on the way in; the parser's own
        // nesting limit here only guards against a corrupted or hand-edited row.
        try buffer.withUnsafeReadableBytes { try JSONParser(maximumDepth: 512).parse($0) }
    }
}

extension JSONB: PostgresNonThrowingEncodable, PostgresArrayEncodable {
    static var psqlType: PostgresDataType { .jsonb }
    static var psqlFormat: PostgresFormat { .binary }
    static var psqlArrayType: PostgresDataType { .jsonbArray }

    func encode<JSONEncoder: PostgresJSONEncoder>(
        into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        byteBuffer.writeInteger(UInt8(1))
        byteBuffer.writeBytes(value.jsonBytes)
    }
}

extension EncodedJSONB: PostgresNonThrowingEncodable, PostgresArrayEncodable {
    static var psqlType: PostgresDataType { .jsonb }
    static var psqlFormat: PostgresFormat { .binary }
    static var psqlArrayType: PostgresDataType { .jsonbArray }

    func encode<JSONEncoder: PostgresJSONEncoder>(
        into byteBuffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>
    ) {
        byteBuffer.writeInteger(UInt8(1))
        byteBuffer.writeBytes(bytes)
    }
}
