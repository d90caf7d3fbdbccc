import Foundation
import SyncImport
import SyncProtocol
import Testing

/// The type table of docs/MIGRATING.md ("Types"), and the policy's choices.
@Suite("Mapping to JSON")
struct JSONMapperTests {
    static let mapper = JSONMapper()

    static func refusal(_ value: BSONValue, policy: ImportPolicy = ImportPolicy()) -> ImportError? {
        do {
            _ = try JSONMapper(policy: policy).map(["_id": .string("d-1"), "a": .array([.null, .document(["b": value])])], collection: "C")
            return nil
        } catch {
            return error
        }
    }

    static let uuidBytes = hex("00112233445566778899aabbccddeeff")

    /// (value, its JSON under the default policy)
    static let table: [(BSONValue, JSONValue)] = [
        (.objectID(ObjectID(hex: "5F1B2C3D4E5F60718293A4B5")!), "5f1b2c3d4e5f60718293a4b5"),
        (.string("héllo"), "héllo"),
        (.symbol("sym"), "sym"),
        (.int32(.min), .int(Int64(Int32.min))),
        (.int64(.max), .int(.max)),
        (.int64(.min), .int(.min)),
        (.int64(9_007_199_254_740_993), .int(9_007_199_254_740_993)),
        (.double(1.5), .double(1.5)),
        (.double(1), .double(1)),
        (.double(.greatestFiniteMagnitude), .double(.greatestFiniteMagnitude)),
        (.decimal128(Decimal128("-1.50E-10")!), "-1.50E-10"),
        (.decimal128(Decimal128("NaN")!), "NaN"),
        (.decimal128(Decimal128("-Infinity")!), "-Infinity"),
        (.decimal128(Decimal128("-0")!), "-0"),
        (.bool(true), true),
        (.null, nil),
        (.undefined, nil),
        (.dateTime(1_795_608_000_000), "2026-11-25T12:00:00.000Z"),
        (.dateTime(1_795_608_000_123), "2026-11-25T12:00:00.123Z"),
        (.dateTime(0), "1970-01-01T00:00:00.000Z"),
        (.dateTime(-1), "1969-12-31T23:59:59.999Z"),
        (.dateTime(-86_400_000 * 365 - 1), "1968-12-31T23:59:59.999Z"),
        (.dateTime(-62_135_596_800_000), "0001-01-01T00:00:00.000Z"),
        (.dateTime(253_402_300_799_999), "9999-12-31T23:59:59.999Z"),
        (.dateTime(951_782_400_000), "2000-02-29T00:00:00.000Z"),
        (.binary(BSONBinary(subtype: 4, bytes: uuidBytes)), "00112233-4455-6677-8899-aabbccddeeff"),
        (.binary(BSONBinary(subtype: 0, bytes: [0, 1, 2, 0xFE, 0xFF])), "AAEC/v8="),
        (.binary(BSONBinary(subtype: 0x80, bytes: [])), ""),
        (.document([:]), [:]),
        (.array([]), []),
        (.document(["$ref": "User", "$id": .objectID(ObjectID(hex: "5f1b2c3d4e5f60718293a4b5")!)]),
         ["$ref": "User", "$id": "5f1b2c3d4e5f60718293a4b5"]),
        (.array([.document(["a.b": .int32(1), "$c": .array([.document([:])])])]), [["a.b": 1, "$c": [[:]]]]),
    ]

    @Test("each type's JSON", arguments: table)
    func mapping(value: BSONValue, json: JSONValue) throws {
        #expect(try Self.mapper.map(value, collection: "C") == json)
    }

    @Test("refused by default, naming the document and the field", arguments: [
        BSONValue.double(.nan), .double(.infinity), .double(-.infinity),
        .dateTime(253_402_300_800_000), .dateTime(-62_135_596_800_001), .dateTime(.max), .dateTime(.min),
        .timestamp(seconds: 1, increment: 2), .regularExpression(pattern: "a", options: ""), .minKey, .maxKey,
        .javaScript("x"), .javaScriptWithScope(code: "x", scope: [:]),
        .dbPointer(namespace: "db.c", id: ObjectID(hex: "5f1b2c3d4e5f60718293a4b5")!),
        .binary(BSONBinary(subtype: 3, bytes: uuidBytes)), .binary(BSONBinary(subtype: 4, bytes: [1, 2])),
    ])
    func refusedByDefault(value: BSONValue) throws {
        let error = try #require(Self.refusal(value))
        #expect(error.kind == .unsupportedValue)
        #expect(error.path?.description == "a[1].b")
        #expect(error.documentID == "\"d-1\"")
        #expect(error.description.hasPrefix("document (_id \"d-1\"): field a[1].b: ") || error.description.hasPrefix("(_id \"d-1\"): field a[1].b: "))
    }

    @Test("what a JSON body cannot hold: U+0000, a repeated field name")
    func invalidFields() throws {
        #expect(Self.refusal(.string("a\u{0}b"))?.kind == .invalidField)
        #expect(Self.refusal(.document(["x\u{0}": .null]))?.path?.description == "a[1].b[\"x\\u0000\"]")
        let repeated = BSONDocument([.init("x", .int32(1)), .init("x", .int32(2))])
        #expect(Self.refusal(.document(repeated))?.kind == .invalidField)
        #expect(Self.refusal(.document(repeated))?.path?.description == "a[1].b.x")
    }

    @Test("non-finite doubles as strings or nulls, when the policy says so")
    func nonFinite() throws {
        let strings = JSONMapper(policy: ImportPolicy(nonFiniteDoubles: .string))
        #expect(try strings.map(.double(.nan), collection: "C") == "NaN")
        #expect(try strings.map(.double(.infinity), collection: "C") == "Infinity")
        #expect(try strings.map(.double(-.infinity), collection: "C") == "-Infinity")
        let nulls = JSONMapper(policy: ImportPolicy(nonFiniteDoubles: .null))
        #expect(try nulls.map(.double(.nan), collection: "C") == nil)
    }

    @Test("legacy UUIDs in the byte order of their driver", arguments: [
        (LegacyUUIDByteOrder.standard, "00112233445566778899aabbccddeeff"),
        (.javaLegacy, "7766554433221100ffeeddccbbaa9988"),
        (.csharpLegacy, "33221100554477668899aabbccddeeff"),
    ])
    func legacyUUID(order: LegacyUUIDByteOrder, stored: String) throws {
        let mapper = JSONMapper(policy: ImportPolicy(legacyUUIDs: .uuid(order)))
        #expect(try mapper.map(.binary(BSONBinary(subtype: 3, bytes: hex(stored))), collection: "C") == "00112233-4455-6677-8899-aabbccddeeff")
        let asBinary = JSONMapper(policy: ImportPolicy(legacyUUIDs: .binary))
        #expect(try asBinary.map(.binary(BSONBinary(subtype: 3, bytes: [1])), collection: "C") == "AQ==")
    }

    @Test("the fallback keeps refused values as canonical Extended JSON")
    func fallback() throws {
        let mapper = JSONMapper(policy: ImportPolicy(fallback: ImportPolicy.keepExtendedJSON))
        #expect(try mapper.map(.timestamp(seconds: 1, increment: 2), collection: "C") == ["$timestamp": ["t": 1, "i": 2]])
        #expect(try mapper.map(.dateTime(253_402_300_800_000), collection: "C") == ["$date": ["$numberLong": "253402300800000"]])
        #expect(try mapper.map(.minKey, collection: "C") == ["$minKey": 1])
        #expect(try mapper.map(.regularExpression(pattern: "a", options: "i"), collection: "C")
            == ["$regularExpression": ["pattern": "a", "options": "i"]])
        // What the fallback is not asked about keeps the table's mapping.
        #expect(try mapper.map(.double(.nan), collection: "C") == ["$numberDouble": "NaN"])
        #expect(try mapper.map(.int64(3), collection: "C") == 3)
    }

    @Test("the fallback sees the field and may refuse by throwing")
    func fallbackContext() throws {
        struct NoCode: Error, CustomStringConvertible { var description: String { "no code here" } }
        let mapper = JSONMapper(policy: ImportPolicy(fallback: { field in
            if case .javaScript = field.value { throw NoCode() }
            return .string("\(field.collection) \(field.path) \(field.documentID?.displayText ?? "-")")
        }))
        #expect(try mapper.map(["_id": .int32(7), "t": .array([.minKey])], collection: "C") == ["_id": 7, "t": ["C t[0] 7"]])
        #expect {
            _ = try mapper.map(["_id": .int32(7), "f": .javaScript("x")], collection: "C")
        } throws: { error in
            guard let error = error as? ImportError else { return false }
            return error.kind == .refusedByPolicy && error.path == FieldPath(field: "f") && error.message.contains("no code here")
        }
    }

    @Test("binary data by collection and field: blobs where the rules say, base64 elsewhere")
    func binaryPolicy() throws {
        let seen = Seen()
        let policy = BinaryPolicy()
            .storing("image.picture", in: "ChatMessage", as: .blob { field in
                seen.add("\(field.collection) \(field.path) \(field.documentID?.displayText ?? "-") \(field.binary.bytes)")
                return ["@blob": "stored"]
            })
            .storing("*.thumbs", as: .blob { _ in "thumb" })
        let mapper = JSONMapper(policy: ImportPolicy(binary: policy))
        let bytes = BSONValue.binary(BSONBinary(subtype: 0, bytes: [1, 2]))
        let document: BSONDocument = [
            "_id": .string("m-1"), "image": .document(["picture": bytes, "thumbNail": bytes]),
            "images": .array([.document(["thumbs": bytes])]), "picture": bytes,
        ]
        #expect(try mapper.map(document, collection: "ChatMessage") == [
            "_id": "m-1", "image": ["picture": ["@blob": "stored"], "thumbNail": "AQI="], "images": [["thumbs": "thumb"]],
            "picture": "AQI=",
        ])
        #expect(seen.values == ["ChatMessage image.picture \"m-1\" [1, 2]"])
        // The rule is for ChatMessage only.
        #expect(try mapper.map(document, collection: "User")["image"] == ["picture": "AQI=", "thumbNail": "AQI="])
        guard case .blob = policy.treatment(collection: "X", path: FieldPath([.field("a"), .index(3), .field("thumbs")])) else {
            Issue.record("a[3].thumbs is not stored as a blob")
            return
        }
    }

    @Test("a blob closure that throws refuses the document, naming the field")
    func blobFailure() {
        struct Full: Error {}
        let mapper = JSONMapper(policy: ImportPolicy(binary: BinaryPolicy(fallback: .blob { _ in throw Full() })))
        #expect {
            _ = try mapper.map(["_id": .string("x"), "b": .array([.binary(BSONBinary(subtype: 0, bytes: []))])], collection: "C")
        } throws: { error in
            guard let error = error as? ImportError else { return false }
            return error.kind == .refusedByPolicy && error.path?.description == "b[0]" && error.documentID == "\"x\""
        }
    }

    @Test("field paths are written as the protocol's paths, odd names quoted", arguments: [
        (FieldPath([.field("a"), .index(2), .field("b")]), "a[2].b"),
        (FieldPath([.field("a.b"), .field("$c")]), "[\"a.b\"].$c"),
        (FieldPath([.field(""), .field("x[1]")]), "[\"\"][\"x[1]\"]"),
        (FieldPath.root, "(the document)"),
    ])
    func paths(path: FieldPath, text: String) {
        #expect(path.description == text)
    }

    @Test("an error says where: file, document, line, _id, field")
    func errorText() {
        let error = ImportError(.unsupportedValue, "no JSON form", path: FieldPath(field: "t"))
            .located(file: "User.json", documentNumber: 3, documentID: "\"u-1\"", line: 3)
        #expect(error.description == "User.json: document 3 (line 3) (_id \"u-1\"): field t: no JSON form")
    }
}

/// Values a @Sendable closure records.
final class Seen: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []
    func add(_ value: String) { lock.withLock { storage.append(value) } }
    var values: [String] { lock.withLock { storage } }
}

extension JSONMapperTests {
    @Test("the fallback decides field by field, legacy UUIDs and non-finite doubles included")
    func fallbackPerField() throws {
        let mapper = JSONMapper(policy: ImportPolicy(fallback: { field in
            switch (field.collection, field.path.description, field.value) {
            case ("Reading", "value", .double(let number)) where number.isNaN: return nil
            case ("Reading", _, .double): return .string("out of range")
            case (_, "legacy", .binary): return try ImportPolicy.keepExtendedJSON(field)
            default: return nil
            }
        }))
        #expect(try mapper.map(["max": .double(.infinity)], collection: "Reading") == ["max": "out of range"])
        #expect(throws: ImportError.self) { try mapper.map(["value": .double(.nan)], collection: "Reading") }
        #expect(throws: ImportError.self) { try mapper.map(["max": .double(.infinity)], collection: "Other") }
        #expect(try mapper.map(["legacy": .binary(BSONBinary(subtype: 3, bytes: [1]))], collection: "C")
            == ["legacy": ["$binary": ["base64": "AQ==", "subType": "03"]]])
    }
}
