import Foundation
import SyncProtocol

extension BSONValue {
    /// The value as canonical Extended JSON v2, as a JSON value: `{"$numberLong": "42"}`,
    /// `{"$date": {"$numberLong": "…"}}`. Nothing is lost (but the order of a document's
    /// fields, and a repeated field name but the last).
    public var canonicalExtendedJSON: JSONValue {
        switch self {
        case .double(let value):
            let text: String
            if value.isNaN {
                text = "NaN"
            } else if value.isInfinite {
                text = value < 0 ? "-Infinity" : "Infinity"
            } else if value == value.rounded(), abs(value) < 1e15 {
                text = (value.sign == .minus && value == 0 ? "-" : "") + String(Int64(value)) + ".0"
            } else {
                text = "\(value)"
            }
            return ["$numberDouble": .string(text)]
        case .string(let text):
            return .string(text)
        case .document(let document):
            return document.canonicalExtendedJSON
        case .array(let elements):
            return .array(elements.map(\.canonicalExtendedJSON))
        case .binary(let binary):
            return ["$binary": ["base64": .string(Data(binary.bytes).base64EncodedString()), "subType": .string(binary.subtypeText)]]
        case .undefined:
            return ["$undefined": true]
        case .objectID(let id):
            return ["$oid": .string(id.hex)]
        case .bool(let value):
            return .bool(value)
        case .dateTime(let milliseconds):
            return ["$date": ["$numberLong": .string(String(milliseconds))]]
        case .null:
            return .null
        case .regularExpression(let pattern, let options):
            return ["$regularExpression": ["pattern": .string(pattern), "options": .string(options)]]
        case .dbPointer(let namespace, let id):
            return ["$dbPointer": ["$ref": .string(namespace), "$id": ["$oid": .string(id.hex)]]]
        case .javaScript(let code):
            return ["$code": .string(code)]
        case .symbol(let text):
            return ["$symbol": .string(text)]
        case .javaScriptWithScope(let code, let scope):
            return ["$code": .string(code), "$scope": scope.canonicalExtendedJSON]
        case .int32(let value):
            return ["$numberInt": .string(String(value))]
        case .timestamp(let seconds, let increment):
            return ["$timestamp": ["t": .int(Int64(seconds)), "i": .int(Int64(increment))]]
        case .int64(let value):
            return ["$numberLong": .string(String(value))]
        case .decimal128(let value):
            return ["$numberDecimal": .string(value.description)]
        case .minKey:
            return ["$minKey": 1]
        case .maxKey:
            return ["$maxKey": 1]
        }
    }
}

extension BSONDocument {
    /// The document as canonical Extended JSON (``BSONValue/canonicalExtendedJSON``).
    public var canonicalExtendedJSON: JSONValue {
        .object(Dictionary(fields.map { ($0.name, $0.value.canonicalExtendedJSON) }, uniquingKeysWith: { _, last in last }))
    }
}
