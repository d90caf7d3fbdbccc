import SyncProtocol

extension BSONValue {
    /// A short text of the value for messages, as the MongoDB shell writes it: `"u-1"`, `42`,
    /// `ObjectId("5f1b…")`, `UUID("…")`; other values by their type.
    public var displayText: String {
        switch self {
        case .string(let text): return JSONValue.string(text).jsonString
        case .int32(let value): return String(value)
        case .int64(let value): return "NumberLong(\(value))"
        case .double(let value): return String(value)
        case .bool(let value): return String(value)
        case .null: return "null"
        case .objectID(let id): return "ObjectId(\"\(id.hex)\")"
        case .decimal128(let value): return "NumberDecimal(\"\(value)\")"
        case .binary(let binary) where binary.subtype == BSONBinary.uuid && binary.bytes.count == 16:
            return "UUID(\"\(UUIDText.string(binary.bytes))\")"
        case .dateTime(let milliseconds): return "Date(\(milliseconds))"
        default: return typeName
        }
    }
}
