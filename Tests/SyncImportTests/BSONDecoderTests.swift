import SyncImport
import Testing

/// BSON documents built byte by byte from the BSON 1.1 specification: every element type,
/// and the malformations a decoder must refuse.
@Suite("BSON decoding")
struct BSONDecoderTests {
    static func value(_ type: UInt8, _ bytes: [UInt8]) throws -> BSONValue {
        try BSONDecoder().decode(bsonDocument(element(type, "v", bytes)))["v"]!
    }

    static let oid: [UInt8] = hex("57e193d7a9cc81b4027498b5")

    /// (type, value bytes, value)
    static let table: [(UInt8, [UInt8], BSONValue)] = [
        (0x01, hex("000000000000f03f"), .double(1)),
        (0x01, hex("0000000000000080"), .double(-0.0)),
        (0x01, hex("000000000000f07f"), .double(.infinity)),
        (0x02, bsonString("héllo"), .string("héllo")),
        (0x02, bsonString(""), .string("")),
        (0x02, bsonString("a\u{0}b"), .string("a\u{0}b")),
        (0x03, bsonDocument(element(0x10, "x", int32LE(1))), .document(["x": .int32(1)])),
        (0x03, bsonDocument([]), .document([:])),
        (0x04, bsonDocument(element(0x10, "0", int32LE(1)) + element(0x02, "1", bsonString("a"))), .array([.int32(1), .string("a")])),
        (0x04, bsonDocument([]), .array([])),
        (0x05, int32LE(3) + [0x00, 1, 2, 3], .binary(BSONBinary(subtype: 0, bytes: [1, 2, 3]))),
        (0x05, int32LE(0) + [0x80], .binary(BSONBinary(subtype: 0x80, bytes: []))),
        // Subtype 2 carries its own length inside: the payload is what follows it.
        (0x05, int32LE(6) + [0x02] + int32LE(2) + [0xAB, 0xCD], .binary(BSONBinary(subtype: 2, bytes: [0xAB, 0xCD]))),
        (0x05, int32LE(16) + [0x04] + hex("c8edabc3f7384ca3b68dab92a91478a3"),
         .binary(BSONBinary(subtype: 4, bytes: hex("c8edabc3f7384ca3b68dab92a91478a3")))),
        (0x06, [], .undefined),
        (0x07, oid, .objectID(ObjectID(bytes: oid)!)),
        (0x08, [1], .bool(true)),
        (0x08, [0], .bool(false)),
        (0x09, hex("00f8c4ba9c010000"), .dateTime(0x019C_BAC4_F800)),
        (0x09, hex("ffffffffffffffff"), .dateTime(-1)),
        (0x0A, [], .null),
        (0x0B, Array("^a".utf8) + [0] + Array("im".utf8) + [0], .regularExpression(pattern: "^a", options: "im")),
        (0x0C, bsonString("db.c") + oid, .dbPointer(namespace: "db.c", id: ObjectID(bytes: oid)!)),
        (0x0D, bsonString("x = 1"), .javaScript("x = 1")),
        (0x0E, bsonString("sym"), .symbol("sym")),
        (0x0F, int32LE(4 + 6 + 12) + bsonString("x") + bsonDocument(element(0x10, "y", int32LE(2))),
         .javaScriptWithScope(code: "x", scope: ["y": .int32(2)])),
        (0x10, int32LE(-2_147_483_648), .int32(.min)),
        (0x11, hex("0700000000f15365"), .timestamp(seconds: 0x6553_F100, increment: 7)),
        (0x12, hex("ffffffffffffff7f"), .int64(.max)),
        (0x12, hex("0000000000000080"), .int64(.min)),
        (0x12, hex("0100000000002000"), .int64(9_007_199_254_740_993)),
        (0x13, hex("01000000000000000000000000004030"), .decimal128(Decimal128("1")!)),
        (0xFF, [], .minKey),
        (0x7F, [], .maxKey),
    ]

    @Test("every element type", arguments: table)
    func decodes(type: UInt8, bytes: [UInt8], value: BSONValue) throws {
        #expect(try Self.value(type, bytes) == value)
        #expect(value.typeCode == type)
    }

    @Test("fields keep their order, repeated names included")
    func order() throws {
        let document = try BSONDecoder().decode(bsonDocument(
            element(0x10, "b", int32LE(1)) + element(0x10, "a", int32LE(2)) + element(0x10, "b", int32LE(3))))
        #expect(document.fields.map(\.name) == ["b", "a", "b"])
        #expect(document["b"] == .int32(1))
    }

    /// (document bytes, path of the error, what it says)
    static let malformed: [([UInt8], String, String)] = [
        // A length prefix that disagrees with the bytes.
        (int32LE(10) + [0x0A, 0x00], "(the document)", "only 6 bytes remain"),
        (int32LE(4) + [0], "(the document)", "least is 5"),
        (bsonDocument(element(0x0A, "a", [])).dropLast() + [1], "(the document)", "has no terminating NUL"),
        (int32LE(12) + element(0x0A, "a", []) + [0] + element(0x0A, "b", []) + [0], "(the document)", "ends at byte 8"),
        // Values cut short or malformed.
        (bsonDocument(element(0x10, "n", [1, 0])), "n", "needs 4 bytes"),
        (bsonDocument(element(0x02, "s", int32LE(0))), "s", "least is 1"),
        (bsonDocument(element(0x02, "s", int32LE(3) + [0x61, 0x62, 0x63])), "s", "does not end with NUL"),
        (bsonDocument(element(0x02, "s", int32LE(2) + [0xFF, 0])), "s", "not valid UTF-8"),
        (bsonDocument(element(0x02, "s", int32LE(100) + [0x61, 0])), "s", "needs 100 bytes"),
        (bsonDocument(element(0x08, "b", [2])), "b", "only 0 and 1"),
        (bsonDocument(element(0x05, "x", int32LE(-1) + [0])), "x", "length -1"),
        (bsonDocument(element(0x05, "x", int32LE(5) + [0x02] + int32LE(2) + [1])), "x", "says 2 bytes inside 1"),
        (bsonDocument(element(0x0F, "c", int32LE(30) + bsonString("x") + bsonDocument([]))), "c", "cannot hold"),
        (bsonDocument(element(0x03, "d", bsonDocument(element(0x20, "z", [])))), "d.z", "unknown element type 0x20"),
        (bsonDocument(element(0x03, "d", bsonDocument(element(0x04, "a", bsonDocument(element(0x08, "0", [7])))))), "d.a[0]", "only 0 and 1"),
        (bsonDocument([0x0A, 0x61]), "(the document)", "terminating NUL"),
    ]

    @Test("malformed documents are refused, naming the field", arguments: malformed)
    func refused(bytes: [UInt8], path: String, message: String) {
        #expect {
            _ = try BSONDecoder().decode(bytes)
        } throws: { error in
            guard let error = error as? ImportError else { return false }
            return error.kind == .malformedBSON && (error.path?.description ?? "(the document)") == path
                && error.message.contains(message)
        }
    }

    @Test("an error names the document's _id when it was read before")
    func namesID() {
        let bytes = bsonDocument(element(0x02, "_id", bsonString("m-1")) + element(0x08, "b", [9]))
        #expect {
            _ = try BSONDecoder().decode(bytes)
        } throws: { error in
            (error as? ImportError)?.documentID == "\"m-1\""
        }
    }

    @Test("nesting is limited")
    func depth() {
        var bytes = bsonDocument([])
        for _ in 0..<10 { bytes = bsonDocument(element(0x03, "d", bytes)) }
        #expect(throws: Never.self) { try BSONDecoder(maximumDepth: 11).decode(bytes) }
        #expect {
            _ = try BSONDecoder(maximumDepth: 10).decode(bytes)
        } throws: { error in
            (error as? ImportError)?.kind == .tooDeep
        }
    }
}
