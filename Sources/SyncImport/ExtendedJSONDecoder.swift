import Foundation
import SyncProtocol

/// Turns a parsed JSON document of Extended JSON v2 (canonical or relaxed, whichever it is, as
/// the specification requires of parsers) into a ``BSONDocument``. Pure: no I/O.
///
/// Strict as the specification asks: an object with a type wrapper's key (`$numberLong`,
/// `$binary`, …) must have exactly that wrapper's keys and value types, else the document is
/// refused naming the field; `$`-keys of no wrapper (`$ref`/`$id` of a DBRef, `$foo`) are
/// ordinary fields. The legacy forms of old mongoexport versions (`{"$date": 1356351330000}`,
/// `{"$binary": "…", "$type": "00"}`, `{"$regex": "…", "$options": "…"}`) are read only with
/// ``acceptsLegacyForms``.
public struct ExtendedJSONDecoder: Sendable {
    public var acceptsLegacyForms: Bool

    public init(acceptsLegacyForms: Bool = false) {
        self.acceptsLegacyForms = acceptsLegacyForms
    }

    /// The document `json` describes (it must be an object), and the forms it was seen to use.
    public func decode(_ json: JSONValue) throws(ImportError) -> (document: BSONDocument, forms: ExtendedJSONForms) {
        guard case .object(let fields) = json else {
            throw ImportError(.malformedJSON, "a document must be a JSON object, not \(Self.kind(of: json))")
        }
        var walker = ExtendedJSONWalker(acceptsLegacyForms: acceptsLegacyForms)
        let document = try walker.document(fields)
        return (document, walker.forms)
    }

    /// The value one Extended JSON value describes (a type wrapper, or any JSON value).
    public func decodeValue(_ json: JSONValue) throws(ImportError) -> BSONValue {
        var walker = ExtendedJSONWalker(acceptsLegacyForms: acceptsLegacyForms)
        return try walker.value(json)
    }

    static func kind(of json: JSONValue) -> String {
        switch json {
        case .null: "null"
        case .bool: "a boolean"
        case .int, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}

/// The walk of one document of ``ExtendedJSONDecoder`` (also used by ``DirectMapper`` for the
/// type wrappers).
struct ExtendedJSONWalker {
    let acceptsLegacyForms: Bool
    var forms: ExtendedJSONForms = []
    var path = PathStack()

    init(acceptsLegacyForms: Bool) {
        self.acceptsLegacyForms = acceptsLegacyForms
    }

    /// The keys that make an object a type wrapper.
    static let wrapperKeys: Set<String> = [
        "$oid", "$symbol", "$numberInt", "$numberLong", "$numberDouble", "$numberDecimal", "$binary", "$code",
        "$scope", "$timestamp", "$regularExpression", "$dbPointer", "$date", "$minKey", "$maxKey", "$undefined",
        "$uuid",
    ]

    func failure(_ message: String) -> ImportError {
        ImportError(.invalidExtendedJSON, message, path: path.path)
    }

    /// Fields in the parser's order (sorted, for a stable order: JSON objects have none).
    mutating func document(_ fields: [String: JSONValue]) throws(ImportError) -> BSONDocument {
        var result: [BSONDocument.Field] = []
        result.reserveCapacity(fields.count)
        for name in fields.keys.sorted() {
            path.push(.field(name))
            result.append(BSONDocument.Field(name, try value(fields[name]!)))
            path.pop()
        }
        return BSONDocument(result)
    }

    mutating func value(_ json: JSONValue) throws(ImportError) -> BSONValue {
        switch json {
        case .null: return .null
        case .bool(let value): return .bool(value)
        case .string(let text): return .string(text)
        case .int(let value):
            forms.insert(.relaxed)
            if let small = Int32(exactly: value) { return .int32(small) }
            return .int64(value)
        case .double(let value):
            // Includes integers past Int64, which the specification reads as doubles.
            forms.insert(.relaxed)
            return .double(value)
        case .array(let elements):
            var values: [BSONValue] = []
            values.reserveCapacity(elements.count)
            for (index, element) in elements.enumerated() {
                path.push(.index(index))
                values.append(try value(element))
                path.pop()
            }
            return .array(values)
        case .object(let fields):
            if let wrapper = try self.wrapper(fields) { return wrapper }
            return .document(try document(fields))
        }
    }

    /// The value of a type wrapper object; `nil` for an ordinary document.
    mutating func wrapper(_ fields: [String: JSONValue]) throws(ImportError) -> BSONValue? {
        // Every wrapper's keys (the legacy ones' too) start with "$"; most objects have none.
        guard fields.keys.contains(where: { $0.utf8.first == UInt8(ascii: "$") }) else { return nil }
        if acceptsLegacyForms, let legacy = try legacyWrapper(fields) { return legacy }
        let key: String
        if fields.count == 1, let only = fields.keys.first {
            // The common case ({"$oid": …}, {"$date": …}): no list or set of the keys to make.
            guard Self.wrapperKeys.contains(only) else { return nil }
            key = only
        } else {
            guard let found = fields.keys.filter(Self.wrapperKeys.contains).min() else { return nil }
            key = found
        }
        var keys: Set<String> { Set(fields.keys) }
        // A list, not a set: no set of one key made and hashed for every wrapper read.
        func exactly(_ expected: [String]) throws(ImportError) {
            guard fields.count == expected.count, expected.allSatisfy({ fields[$0] != nil }) else {
                let list = expected.sorted().map { "\"\($0)\"" }.joined(separator: " and ")
                throw failure("an object with \"\(key)\" must have exactly the key\(expected.count > 1 ? "s" : "") \(list), not \(keys.sorted())")
            }
        }
        switch key {
        case "$oid":
            try exactly(["$oid"])
            let text = try string(fields["$oid"]!, of: "$oid")
            guard text.utf8.count == 24, let id = ObjectID(hex: text) else {
                throw failure("\"$oid\" must be 24 hexadecimal digits, not \(JSONValue.string(text).jsonString)")
            }
            return .objectID(id)
        case "$symbol":
            try exactly(["$symbol"])
            return .symbol(try string(fields["$symbol"]!, of: "$symbol"))
        case "$numberInt":
            try exactly(["$numberInt"])
            let text = try string(fields["$numberInt"]!, of: "$numberInt")
            guard Self.isInteger(text), let value = Int32(text) else {
                throw failure("\"$numberInt\" must be a 32-bit integer as a string, not \(JSONValue.string(text).jsonString)")
            }
            forms.insert(.canonical)
            return .int32(value)
        case "$numberLong":
            try exactly(["$numberLong"])
            forms.insert(.canonical)
            return .int64(try int64(fields["$numberLong"]!))
        case "$numberDouble":
            try exactly(["$numberDouble"])
            let text = try string(fields["$numberDouble"]!, of: "$numberDouble")
            switch text {
            case "Infinity": return .double(.infinity)
            case "-Infinity": return .double(-.infinity)
            case "NaN": return .double(.nan)
            default:
                guard Self.isDecimalNumber(text), let value = Double(text), value.isFinite else {
                    throw failure("\"$numberDouble\" must be a decimal number, \"Infinity\", \"-Infinity\" or \"NaN\", not \(JSONValue.string(text).jsonString)")
                }
                forms.insert(.canonical)
                return .double(value)
            }
        case "$numberDecimal":
            try exactly(["$numberDecimal"])
            let text = try string(fields["$numberDecimal"]!, of: "$numberDecimal")
            guard let value = Decimal128(text) else {
                throw failure("\"$numberDecimal\" \(JSONValue.string(text).jsonString) is not a decimal a Decimal128 holds exactly")
            }
            return .decimal128(value)
        case "$binary":
            try exactly(["$binary"])
            guard case .object(let inner) = fields["$binary"]!, Set(inner.keys) == ["base64", "subType"] else {
                throw failure("\"$binary\" must be an object with exactly the keys \"base64\" and \"subType\"")
            }
            return .binary(try binary(base64: inner["base64"]!, subtype: inner["subType"]!))
        case "$uuid":
            try exactly(["$uuid"])
            let text = try string(fields["$uuid"]!, of: "$uuid")
            guard let bytes = UUIDText.bytes(text) else {
                throw failure("\"$uuid\" must be a UUID's 8-4-4-4-12 hexadecimal text, not \(JSONValue.string(text).jsonString)")
            }
            return .binary(BSONBinary(subtype: BSONBinary.uuid, bytes: bytes))
        case "$code", "$scope":
            if keys == ["$code"] { return .javaScript(try string(fields["$code"]!, of: "$code")) }
            try exactly(["$code", "$scope"])
            let code = try string(fields["$code"]!, of: "$code")
            guard case .object(let scope) = fields["$scope"]! else { throw failure("\"$scope\" must be an object") }
            path.push(.field("$scope"))
            let document = try document(scope)
            path.pop()
            return .javaScriptWithScope(code: code, scope: document)
        case "$timestamp":
            try exactly(["$timestamp"])
            guard case .object(let inner) = fields["$timestamp"]!, Set(inner.keys) == ["t", "i"],
                case .int(let seconds) = inner["t"]!, case .int(let increment) = inner["i"]!,
                let t = UInt32(exactly: seconds), let i = UInt32(exactly: increment)
            else {
                throw failure("\"$timestamp\" must be {\"t\": …, \"i\": …} with two unsigned 32-bit integers")
            }
            return .timestamp(seconds: t, increment: i)
        case "$regularExpression":
            try exactly(["$regularExpression"])
            guard case .object(let inner) = fields["$regularExpression"]!, Set(inner.keys) == ["pattern", "options"],
                case .string(let pattern) = inner["pattern"]!, case .string(let options) = inner["options"]!
            else {
                throw failure("\"$regularExpression\" must be {\"pattern\": …, \"options\": …} with two strings")
            }
            return .regularExpression(pattern: pattern, options: String(options.sorted()))
        case "$dbPointer":
            try exactly(["$dbPointer"])
            guard case .object(let inner) = fields["$dbPointer"]!, Set(inner.keys) == ["$ref", "$id"],
                case .string(let namespace) = inner["$ref"]!, case .object(let idFields) = inner["$id"]!,
                idFields.count == 1, case .objectID(let id)? = try? decodeQuietly(.object(idFields))
            else {
                throw failure("\"$dbPointer\" must be {\"$ref\": <string>, \"$id\": {\"$oid\": …}}")
            }
            return .dbPointer(namespace: namespace, id: id)
        case "$date":
            try exactly(["$date"])
            return .dateTime(try date(fields["$date"]!))
        case "$minKey", "$maxKey":
            try exactly([key])
            guard case .int(1) = fields[key]! else { throw failure("\"\(key)\" must be 1") }
            return key == "$minKey" ? .minKey : .maxKey
        case "$undefined":
            try exactly(["$undefined"])
            guard case .bool(true) = fields["$undefined"]! else { throw failure("\"$undefined\" must be true") }
            return .undefined
        default:
            return nil
        }
    }

    /// The forms of old mongoexport versions, when enabled.
    mutating func legacyWrapper(_ fields: [String: JSONValue]) throws(ImportError) -> BSONValue? {
        let keys = Set(fields.keys)
        if keys == ["$binary", "$type"], case .string = fields["$binary"]!, case .string = fields["$type"]! {
            return .binary(try binary(base64: fields["$binary"]!, subtype: fields["$type"]!))
        }
        if keys == ["$date"], case .int(let milliseconds) = fields["$date"]! {
            return .dateTime(milliseconds)
        }
        if keys == ["$regex", "$options"] || keys == ["$regex"], case .string(let pattern) = fields["$regex"]! {
            var options = ""
            if let value = fields["$options"] {
                guard case .string(let text) = value else { return nil }
                options = text
            }
            return .regularExpression(pattern: pattern, options: String(options.sorted()))
        }
        return nil
    }

    /// A wrapper value decoded without touching the forms seen (for the `$id` of a DBPointer).
    func decodeQuietly(_ json: JSONValue) throws(ImportError) -> BSONValue {
        var inner = ExtendedJSONWalker(acceptsLegacyForms: false)
        return try inner.value(json)
    }

    func string(_ json: JSONValue, of key: String) throws(ImportError) -> String {
        guard case .string(let text) = json else {
            throw failure("\"\(key)\" must be a string, not \(ExtendedJSONDecoder.kind(of: json))")
        }
        return text
    }

    func int64(_ json: JSONValue) throws(ImportError) -> Int64 {
        let text = try string(json, of: "$numberLong")
        guard Self.isInteger(text), let value = Int64(text) else {
            throw failure("\"$numberLong\" must be a 64-bit integer as a string, not \(JSONValue.string(text).jsonString)")
        }
        return value
    }

    func binary(base64: JSONValue, subtype: JSONValue) throws(ImportError) -> BSONBinary {
        guard case .string(let subtypeText) = subtype, (1...2).contains(subtypeText.utf8.count),
            let subtypeBytes = HexText.bytes(subtypeText.utf8.count == 1 ? "0" + subtypeText : subtypeText)
        else {
            throw failure("a binary's \"subType\" must be one or two hexadecimal digits")
        }
        guard case .string(let text) = base64, let data = Data(base64Encoded: text) else {
            throw failure("a binary's \"base64\" must be base64 text")
        }
        return BSONBinary(subtype: subtypeBytes[0], bytes: Array(data))
    }

    mutating func date(_ json: JSONValue) throws(ImportError) -> Int64 {
        switch json {
        case .string(let text):
            guard let milliseconds = BSONDateTime.milliseconds(rfc3339: text) else {
                throw failure("\"$date\" \(JSONValue.string(text).jsonString) is not an RFC 3339 date-time with at most millisecond precision")
            }
            forms.insert(.relaxed)
            return milliseconds
        case .object(let inner) where Set(inner.keys) == ["$numberLong"]:
            let milliseconds = try int64(inner["$numberLong"]!)
            if BSONDateTime.relaxedRange.contains(milliseconds) { forms.insert(.canonical) }
            return milliseconds
        default:
            throw failure("\"$date\" must be an RFC 3339 string or {\"$numberLong\": …}")
        }
    }

    /// `-?[0-9]+`
    static func isInteger(_ text: String) -> Bool {
        var digits = Substring(text).utf8[...]
        if digits.first == UInt8(ascii: "-") { digits = digits.dropFirst() }
        return !digits.isEmpty && digits.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// A decimal number's text: digits, sign, point and exponent only (no `inf`, `nan`, hex).
    static func isDecimalNumber(_ text: String) -> Bool {
        !text.isEmpty && text.utf8.contains { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            && text.utf8.allSatisfy { ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || "+-.eE".utf8.contains($0) }
    }
}
