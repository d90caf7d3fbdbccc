import SyncImport
import SyncProtocol
import Testing

/// Extended JSON v2, both forms, every type: vectors written from the Extended JSON
/// specification's conversion table.
@Suite("Extended JSON")
struct ExtendedJSONTests {
    /// The value of `{"v": <text>}`.
    static func decode(_ text: String, legacy: Bool = false) throws -> (BSONValue, ExtendedJSONForms) {
        let json = try JSONParser(maximumDepth: 256).parse("{\"v\": \(text)}")
        let (document, forms) = try ExtendedJSONDecoder(acceptsLegacyForms: legacy).decode(json)
        return (document["v"]!, forms)
    }

    static let oid = ObjectID(hex: "57e193d7a9cc81b4027498b5")!

    /// (canonical, relaxed, value): one row per type of the table, and its edges.
    static let table: [(String, String, BSONValue)] = [
        (#"{"$oid": "57e193d7a9cc81b4027498b5"}"#, #"{"$oid": "57E193D7A9CC81B4027498B5"}"#, .objectID(oid)),
        (#"{"$symbol": "sym"}"#, #"{"$symbol": "sym"}"#, .symbol("sym")),
        (#""text""#, #""text""#, .string("text")),
        (#"{"$numberInt": "42"}"#, "42", .int32(42)),
        (#"{"$numberInt": "-2147483648"}"#, "-2147483648", .int32(.min)),
        (#"{"$numberLong": "9223372036854775807"}"#, "9223372036854775807", .int64(.max)),
        (#"{"$numberLong": "-9223372036854775808"}"#, "-9223372036854775808", .int64(.min)),
        (#"{"$numberLong": "9007199254740993"}"#, "9007199254740993", .int64(9_007_199_254_740_993)),
        (#"{"$numberLong": "2147483648"}"#, "2147483648", .int64(2_147_483_648)),
        (#"{"$numberDouble": "1.0"}"#, "1.0", .double(1)),
        (#"{"$numberDouble": "-1.5e-3"}"#, "-1.5e-3", .double(-0.0015)),
        (#"{"$numberDouble": "1.7976931348623157E+308"}"#, "1.7976931348623157E+308", .double(.greatestFiniteMagnitude)),
        (#"{"$numberDouble": "Infinity"}"#, #"{"$numberDouble": "Infinity"}"#, .double(.infinity)),
        (#"{"$numberDouble": "-Infinity"}"#, #"{"$numberDouble": "-Infinity"}"#, .double(-.infinity)),
        (#"{"$numberDecimal": "1234.5"}"#, #"{"$numberDecimal": "1234.5"}"#, .decimal128(Decimal128("1234.5")!)),
        (#"{"$numberDecimal": "-0E+3"}"#, #"{"$numberDecimal": "-0E+3"}"#, .decimal128(Decimal128("-0E+3")!)),
        (#"{"$binary": {"base64": "AQID", "subType": "00"}}"#, #"{"$binary": {"subType": "0", "base64": "AQID"}}"#,
         .binary(BSONBinary(subtype: 0, bytes: [1, 2, 3]))),
        (#"{"$binary": {"base64": "", "subType": "80"}}"#, #"{"$binary": {"base64": "", "subType": "80"}}"#,
         .binary(BSONBinary(subtype: 0x80, bytes: []))),
        (#"{"$binary": {"base64": "yO2rw/c4TKO2jauSqRR4ow==", "subType": "04"}}"#,
         #"{"$uuid": "c8edabc3-f738-4ca3-b68d-ab92a91478a3"}"#,
         .binary(BSONBinary(subtype: 4, bytes: hex("c8edabc3f7384ca3b68dab92a91478a3")))),
        (#"{"$code": "x = 1"}"#, #"{"$code": "x = 1"}"#, .javaScript("x = 1")),
        (#"{"$code": "x", "$scope": {"y": {"$numberInt": "1"}}}"#, #"{"$scope": {"y": 1}, "$code": "x"}"#,
         .javaScriptWithScope(code: "x", scope: ["y": .int32(1)])),
        (#"{"a": {"$numberInt": "1"}, "b": []}"#, #"{"a": 1, "b": []}"#, .document(["a": .int32(1), "b": .array([])])),
        ("{}", "{}", .document([:])),
        (#"{"$timestamp": {"t": 4294967295, "i": 1}}"#, #"{"$timestamp": {"i": 1, "t": 4294967295}}"#,
         .timestamp(seconds: .max, increment: 1)),
        (#"{"$regularExpression": {"pattern": "^a", "options": "xi"}}"#,
         #"{"$regularExpression": {"options": "ix", "pattern": "^a"}}"#, .regularExpression(pattern: "^a", options: "ix")),
        (#"{"$dbPointer": {"$ref": "db.c", "$id": {"$oid": "57e193d7a9cc81b4027498b5"}}}"#,
         #"{"$dbPointer": {"$id": {"$oid": "57e193d7a9cc81b4027498b5"}, "$ref": "db.c"}}"#, .dbPointer(namespace: "db.c", id: oid)),
        (#"{"$date": {"$numberLong": "1795608000000"}}"#, #"{"$date": "2026-11-25T12:00:00.000Z"}"#, .dateTime(1_795_608_000_000)),
        (#"{"$date": {"$numberLong": "1795608000000"}}"#, #"{"$date": "2026-11-25T13:00:00+01:00"}"#, .dateTime(1_795_608_000_000)),
        (#"{"$date": {"$numberLong": "0"}}"#, #"{"$date": "1970-01-01T00:00:00Z"}"#, .dateTime(0)),
        (#"{"$date": {"$numberLong": "253402300799999"}}"#, #"{"$date": "9999-12-31T23:59:59.999Z"}"#, .dateTime(253_402_300_799_999)),
        (#"{"$date": {"$numberLong": "-1"}}"#, #"{"$date": {"$numberLong": "-1"}}"#, .dateTime(-1)),
        (#"{"$date": {"$numberLong": "-62135596800000"}}"#, #"{"$date": "0001-01-01T00:00:00.000Z"}"#, .dateTime(-62_135_596_800_000)),
        (#"{"$date": {"$numberLong": "253402300800000"}}"#, #"{"$date": {"$numberLong": "253402300800000"}}"#, .dateTime(253_402_300_800_000)),
        // DBRef is a document (a convention, not a type): its `$id` is Extended JSON like any value.
        (#"{"$ref": "c", "$id": {"$oid": "57e193d7a9cc81b4027498b5"}, "$db": "d"}"#,
         #"{"$ref": "c", "$id": {"$oid": "57e193d7a9cc81b4027498b5"}, "$db": "d"}"#,
         .document(["$db": .string("d"), "$id": .objectID(oid), "$ref": .string("c")])),
        // A `$` key of no wrapper is an ordinary field.
        (#"{"$foo": 1.5, "$ref": "only"}"#, #"{"$foo": 1.5, "$ref": "only"}"#, .document(["$foo": .double(1.5), "$ref": .string("only")])),
        (#"{"$minKey": 1}"#, #"{"$minKey": 1}"#, .minKey),
        (#"{"$maxKey": 1}"#, #"{"$maxKey": 1}"#, .maxKey),
        (#"{"$undefined": true}"#, #"{"$undefined": true}"#, .undefined),
        (#"[{"$numberInt": "1"}, [], [{"a": null}]]"#, #"[1, [], [{"a": null}]]"#, .array([.int32(1), .array([]), .array([.document(["a": .null])])])),
        ("true", "true", .bool(true)),
        ("null", "null", .null),
    ]

    @Test("canonical and relaxed read as the same value", arguments: table)
    func bothForms(canonical: String, relaxed: String, value: BSONValue) throws {
        #expect(try Self.decode(canonical).0 == value)
        #expect(try Self.decode(relaxed).0 == value)
    }

    @Test("NaN reads as NaN")
    func nan() throws {
        guard case .double(let value) = try Self.decode(#"{"$numberDouble": "NaN"}"#).0 else {
            Issue.record("not a double")
            return
        }
        #expect(value.isNaN)
    }

    @Test("an integer past Int64 reads as a double, as the specification says")
    func hugeInteger() throws {
        #expect(try Self.decode("18446744073709551616").0 == .double(18_446_744_073_709_551_616))
    }

    @Test("the form is told from the values", arguments: [
        (#"{"$numberInt": "1"}"#, ExtendedJSONFormat.canonical),
        (#"{"$numberLong": "1"}"#, .canonical),
        (#"{"$numberDouble": "1.5"}"#, .canonical),
        (#"{"$date": {"$numberLong": "0"}}"#, .canonical),
        ("1", .relaxed),
        ("1.5", .relaxed),
        (#"{"$date": "2026-11-25T12:00:00Z"}"#, .relaxed),
        (#"[1, {"$numberInt": "1"}]"#, .mixed),
        // Alike in both forms: no evidence.
        (#"{"$date": {"$numberLong": "-1"}}"#, .undetermined),
        (#"{"$numberDouble": "NaN"}"#, .undetermined),
        (#"{"$timestamp": {"t": 1, "i": 2}}"#, .undetermined),
        (#""text""#, .undetermined),
    ])
    func detection(text: String, format: ExtendedJSONFormat) throws {
        #expect(try Self.decode(text).1.format == format)
    }

    /// (text, what the error says): malformed wrappers are refused, naming the field.
    static let malformed: [(String, String)] = [
        (#"{"$oid": "57e193d7a9cc81b4027498"}"#, "24 hexadecimal digits"),
        (#"{"$oid": 1}"#, "must be a string"),
        (#"{"$numberInt": 1}"#, "must be a string"),
        (#"{"$numberInt": "2147483648"}"#, "32-bit integer"),
        (#"{"$numberInt": "1.0"}"#, "32-bit integer"),
        (#"{"$numberLong": "9223372036854775808"}"#, "64-bit integer"),
        (#"{"$numberLong": " 1"}"#, "64-bit integer"),
        (#"{"$numberDouble": "inf"}"#, "decimal number"),
        (#"{"$numberDouble": "0x1p3"}"#, "decimal number"),
        (#"{"$numberDecimal": "1.2.3"}"#, "Decimal128"),
        (#"{"$numberDecimal": "1E+6145"}"#, "Decimal128"),
        (#"{"$binary": {"base64": "AQID"}}"#, "\"base64\" and \"subType\""),
        (#"{"$binary": {"base64": "AQID", "subType": "100"}}"#, "subType"),
        (#"{"$binary": {"base64": "not base64!", "subType": "00"}}"#, "base64"),
        (#"{"$binary": "AQID", "$type": "00"}"#, "exactly the key"),
        (#"{"$uuid": "c8edabc3-f738-4ca3-b68d"}"#, "UUID"),
        (#"{"$code": 1}"#, "must be a string"),
        (#"{"$scope": {}}"#, "exactly the keys"),
        (#"{"$code": "x", "$scope": 1}"#, "must be an object"),
        (#"{"$timestamp": {"t": -1, "i": 1}}"#, "unsigned 32-bit"),
        (#"{"$timestamp": {"t": 1}}"#, "unsigned 32-bit"),
        (#"{"$regularExpression": {"pattern": "a"}}"#, "\"pattern\""),
        (#"{"$dbPointer": {"$ref": "c", "$id": "57e193d7a9cc81b4027498b5"}}"#, "$dbPointer"),
        (#"{"$date": "2026-11-25"}"#, "RFC 3339"),
        (#"{"$date": "2026-11-25T12:00:00.0001Z"}"#, "millisecond"),
        (#"{"$date": 1795608000000}"#, "RFC 3339 string"),
        (#"{"$date": {"$numberLong": 1}}"#, "must be a string"),
        (#"{"$minKey": 0}"#, "must be 1"),
        (#"{"$undefined": false}"#, "must be true"),
        (#"{"$numberInt": "1", "x": 1}"#, "exactly the key"),
        (#"{"$date": "2026-11-25T12:00:00Z", "$numberLong": "1"}"#, "exactly the key"),
    ]

    @Test("malformed type wrappers are refused, naming the field", arguments: malformed)
    func refused(text: String, message: String) {
        #expect {
            _ = try Self.decode("[0, \(text)]")
        } throws: { error in
            guard let error = error as? ImportError else { return false }
            return error.kind == .invalidExtendedJSON && error.path?.description == "v[1]" && error.message.contains(message)
        }
    }

    @Test("the legacy forms of old mongoexport versions, when enabled", arguments: [
        (#"{"$date": 1795608000000}"#, BSONValue.dateTime(1_795_608_000_000)),
        (#"{"$binary": "AQID", "$type": "80"}"#, .binary(BSONBinary(subtype: 0x80, bytes: [1, 2, 3]))),
        (#"{"$regex": "^a", "$options": "mi"}"#, .regularExpression(pattern: "^a", options: "im")),
        (#"{"$regex": "^a"}"#, .regularExpression(pattern: "^a", options: "")),
        // A query's $regex holding a wrapper is a document.
        (#"{"$regex": {"$regularExpression": {"pattern": "a", "options": ""}}, "$options": "i"}"#,
         .document(["$options": .string("i"), "$regex": .regularExpression(pattern: "a", options: "")])),
    ])
    func legacy(text: String, value: BSONValue) throws {
        #expect(try Self.decode(text, legacy: true).0 == value)
    }

    @Test("the top-level object is always a document, never a wrapper")
    func topLevel() throws {
        let json = try JSONParser().parse(#"{"$numberInt": "1"}"#)
        #expect(try ExtendedJSONDecoder().decode(json).document == ["$numberInt": .string("1")])
        #expect(throws: ImportError.self) { try ExtendedJSONDecoder().decode(.array([])) }
    }

    @Test("canonical Extended JSON written from a value reads back as the value", arguments: table)
    func roundTrip(canonical: String, relaxed: String, value: BSONValue) throws {
        let written = BSONValue.document(["v": value]).canonicalExtendedJSON
        #expect(try ExtendedJSONDecoder().decode(written).document == ["v": value])
    }
}
