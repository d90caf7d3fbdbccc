import SyncProtocol
import Testing

/// Declared bounds of a collection's documents (issue 29, finding 4): each kind at its edge,
/// and the field a refusal names.
@Suite("Document schemas")
struct DocumentSchemaTests {
    static let schema = DocumentSchema(
        collection: "profile", maximumBodyBytes: 2_000,
        fields: [
            .init("type", .oneOf(["profile"])),
            .init("nick", .string(minimumLength: 1, maximumLength: 10), required: false),
            .init("age", .integer(0...150), required: false),
            .init("score", .number, required: false),
            .init("public", .boolean, required: false),
            .init("born", .nullable(.date), required: false),
            .init("photo", .blob, required: false),
            .init("friends", .array(of: .object([.init("email", .string(maximumLength: 20))]), maximumCount: 3), required: false),
            .init("extra", .any(maximumBytes: 10), required: false),
        ])

    static let photo: JSONValue = ["@blob": .string("sha256:" + String(repeating: "a", count: 64)), "length": 3, "contentType": "image/png"]

    /// The field a body's refusal names, or `nil` when it is accepted.
    /// The field a check refuses (`""` for the whole body's size), or `nil`; checked both ways
    /// the engine calls it, with the body's encoded size given and without, which must agree.
    static func refusedField(_ body: [String: JSONValue], _ schema: DocumentSchema = schema, before: [String: JSONValue]? = nil) -> String? {
        func refused(encodedSize: Int?) -> String? {
            do {
                try schema.check(body, before: before, encodedSize: encodedSize)
                return nil
            } catch {
                #expect(error.code == .validationFailed)
                return error.details?["field"]?.stringValue ?? "?"
            }
        }
        let answer = refused(encodedSize: nil)
        #expect(refused(encodedSize: JSONValue.object(body).jsonBytes.count) == answer)
        return answer
    }

    @Test("a document at every bound is accepted; engine fields are always allowed")
    func atTheBounds() {
        let body: [String: JSONValue] = [
            "_id": "p1", "partition": "profiles=all", "@expiresAt": "2030-01-01T00:00:00Z",
            "type": "profile", "nick": .string(String(repeating: "n", count: 10)), "age": 150, "score": 1.5, "public": true,
            "born": "2000-02-29T00:00:00.000Z", "photo": Self.photo,
            "friends": [["email": "a@b.c"], ["email": .string(String(repeating: "e", count: 20))], ["email": "x"]],
            "extra": "12345678",
        ]
        #expect(Self.refusedField(body) == nil)
        #expect(Self.refusedField(["type": "profile", "born": nil]) == nil)
    }

    @Test("one past each bound is refused, naming the field", arguments: [
        (["type": "profile", "nick": .string(String(repeating: "n", count: 11))], "nick"),
        (["type": "profile", "nick": ""], "nick"),
        (["type": "profile", "nick": 5], "nick"),
        (["type": "room"], "type"),
        ([:], "type"),
        (["type": "profile", "age": 151], "age"),
        (["type": "profile", "age": 1.5], "age"),
        (["type": "profile", "score": "1"], "score"),
        (["type": "profile", "public": "yes"], "public"),
        (["type": "profile", "born": "2001-02-30T00:00:00Z"], "born"),
        (["type": "profile", "photo": ["@blob": "x"]], "photo"),
        (["type": "profile", "friends": [["email": "a"], ["email": "b"], ["email": "c"], ["email": "d"]]], "friends"),
        (["type": "profile", "friends": [["email": "a"], ["email": .string(String(repeating: "e", count: 21))]]], "friends[1].email"),
        (["type": "profile", "friends": [["email": "a", "note": "x"]]], "friends[0].note"),
        (["type": "profile", "extra": "123456789"], "extra"),
        (["type": "profile", "payload": "x"], "payload"),
    ] as [([String: JSONValue], String)])
    func pastTheBound(_ body: [String: JSONValue], _ field: String) {
        #expect(Self.refusedField(body) == field)
    }

    @Test("the body's size is bounded as a whole; other fields may be allowed, each within its bytes")
    func sizeAndOtherFields() {
        let big = DocumentSchema(collection: "note", maximumBodyBytes: 100, fields: [], otherFields: .allowed(maximumBytes: 80))
        #expect(Self.refusedField(["a": .string(String(repeating: "x", count: 50))], big) == nil)
        #expect(Self.refusedField(["a": .string(String(repeating: "x", count: 79))], big) == "a")
        #expect(Self.refusedField(["a": .string(String(repeating: "x", count: 60)), "b": .string(String(repeating: "x", count: 60))], big) == "")
    }

    @Test("a write is refused for what it changes: fields it leaves as they were (the server's, say) are not checked again")
    func changesOnly() {
        let before: [String: JSONValue] = ["type": "profile", "note": "written by the server", "nick": "ann"]
        #expect(Self.refusedField(["type": "profile", "note": "written by the server", "nick": "annie"], before: before) == nil)
        #expect(Self.refusedField(["type": "profile", "note": "changed by the user", "nick": "annie"], before: before) == "note")
        #expect(Self.refusedField(["type": "profile", "note": "written by the server", "nick": .string(String(repeating: "n", count: 11))], before: before) == "nick")
        // A body over its size that the write does not grow is not refused for its size.
        let small = DocumentSchema(collection: "note", maximumBodyBytes: 20, fields: [], otherFields: .allowed(maximumBytes: 100))
        let big: [String: JSONValue] = ["a": .string(String(repeating: "x", count: 30))]
        #expect(Self.refusedField(["a": .string(String(repeating: "y", count: 30))], small, before: big) == nil)
        #expect(Self.refusedField(["a": .string(String(repeating: "y", count: 31))], small, before: big) == "")
    }

    @Test("the size the engine has already encoded is the one checked: the body is not encoded again")
    func encodedSizeGiven() {
        let small = DocumentSchema(collection: "note", maximumBodyBytes: 20, fields: [], otherFields: .allowed(maximumBytes: 100))
        #expect(throws: SyncError.self) { try small.check(["a": "b"], encodedSize: 21) }
        #expect(throws: Never.self) { try small.check(["a": .string(String(repeating: "x", count: 30))], encodedSize: 20) }
    }

    @Test("a string's bounds count characters, not bytes", arguments: [
        ("ééé", true), ("éééé", false), ("é", false), ("\r\n", false), ("\r\na", true), ("abc", true), ("", false), ("👍🏽👍🏽👍🏽", true),
    ])
    func stringBoundsInCharacters(text: String, accepted: Bool) {
        let schema = DocumentSchema(
            collection: "note", maximumBodyBytes: 2_000, fields: [.init("t", .string(minimumLength: 2, maximumLength: 3))])
        #expect((Self.refusedField(["t": .string(text)], schema) == nil) == accepted)
    }
}
