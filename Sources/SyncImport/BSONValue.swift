/// One value of a BSON document: every type of the BSON 1.1 specification, deprecated ones
/// included, as the readers found it. ``JSONMapper`` turns it into a `JSONValue`.
public indirect enum BSONValue: Hashable, Sendable {
    /// 0x01: a 64-bit IEEE 754 binary floating point number.
    case double(Double)
    /// 0x02: a UTF-8 string.
    case string(String)
    /// 0x03: an embedded document.
    case document(BSONDocument)
    /// 0x04: an array (in BSON a document whose keys are `"0"`, `"1"`, …).
    case array([BSONValue])
    /// 0x05: binary data with its subtype.
    case binary(BSONBinary)
    /// 0x06: undefined (deprecated).
    case undefined
    /// 0x07
    case objectID(ObjectID)
    /// 0x08
    case bool(Bool)
    /// 0x09: UTC datetime, milliseconds since the Unix epoch.
    case dateTime(Int64)
    /// 0x0A
    case null
    /// 0x0B: a regular expression: its pattern and options (`i`, `l`, `m`, `s`, `u`, `x`).
    case regularExpression(pattern: String, options: String)
    /// 0x0C: DBPointer (deprecated): a namespace and an ObjectId.
    case dbPointer(namespace: String, id: ObjectID)
    /// 0x0D: JavaScript code.
    case javaScript(String)
    /// 0x0E: symbol (deprecated).
    case symbol(String)
    /// 0x0F: JavaScript code with scope (deprecated).
    case javaScriptWithScope(code: String, scope: BSONDocument)
    /// 0x10
    case int32(Int32)
    /// 0x11: a replication timestamp: seconds and an increment.
    case timestamp(seconds: UInt32, increment: UInt32)
    /// 0x12
    case int64(Int64)
    /// 0x13
    case decimal128(Decimal128)
    /// 0xFF
    case minKey
    /// 0x7F
    case maxKey
}

extension BSONValue {
    /// The BSON element type byte.
    public var typeCode: UInt8 {
        switch self {
        case .double: 0x01
        case .string: 0x02
        case .document: 0x03
        case .array: 0x04
        case .binary: 0x05
        case .undefined: 0x06
        case .objectID: 0x07
        case .bool: 0x08
        case .dateTime: 0x09
        case .null: 0x0A
        case .regularExpression: 0x0B
        case .dbPointer: 0x0C
        case .javaScript: 0x0D
        case .symbol: 0x0E
        case .javaScriptWithScope: 0x0F
        case .int32: 0x10
        case .timestamp: 0x11
        case .int64: 0x12
        case .decimal128: 0x13
        case .minKey: 0xFF
        case .maxKey: 0x7F
        }
    }

    /// The type's name, as messages say it.
    public var typeName: String {
        switch self {
        case .double: "Double"
        case .string: "String"
        case .document: "Document"
        case .array: "Array"
        case .binary(let binary): "Binary (subtype \(binary.subtypeText))"
        case .undefined: "Undefined"
        case .objectID: "ObjectId"
        case .bool: "Boolean"
        case .dateTime: "Date"
        case .null: "Null"
        case .regularExpression: "Regular expression"
        case .dbPointer: "DBPointer"
        case .javaScript: "JavaScript code"
        case .symbol: "Symbol"
        case .javaScriptWithScope: "JavaScript code with scope"
        case .int32: "Int32"
        case .timestamp: "Timestamp"
        case .int64: "Int64"
        case .decimal128: "Decimal128"
        case .minKey: "MinKey"
        case .maxKey: "MaxKey"
        }
    }
}

/// BSON binary data: a subtype and the bytes.
public struct BSONBinary: Hashable, Sendable {
    public var subtype: UInt8
    public var bytes: [UInt8]

    public init(subtype: UInt8, bytes: [UInt8]) {
        self.subtype = subtype
        self.bytes = bytes
    }

    public static let generic: UInt8 = 0x00
    public static let function: UInt8 = 0x01
    /// The old generic subtype, whose payload starts with its own int32 length.
    public static let oldBinary: UInt8 = 0x02
    /// A UUID in a driver's legacy byte order.
    public static let legacyUUID: UInt8 = 0x03
    /// A UUID in RFC 4122 byte order.
    public static let uuid: UInt8 = 0x04
    public static let md5: UInt8 = 0x05
    public static let encrypted: UInt8 = 0x06
    public static let compressedColumn: UInt8 = 0x07
    public static let sensitive: UInt8 = 0x08
    public static let vector: UInt8 = 0x09

    /// The subtype as two lowercase hexadecimal digits, as Extended JSON writes it.
    public var subtypeText: String { HexText.string([subtype]) }
}

extension BSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByNilLiteral,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(arrayLiteral elements: BSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, BSONValue)...) {
        self = .document(BSONDocument(elements.map { BSONDocument.Field($0.0, $0.1) }))
    }
}
