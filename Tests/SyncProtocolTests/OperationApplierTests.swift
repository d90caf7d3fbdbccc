import SyncProtocol
import Testing

/// The operation rules as pure logic; the storage tests check the same rules end to end.
@Suite("SyncOperation applier")
struct OperationApplierTests {
    let partition = try! Partition("user=u1")
    let key = try! ObjectKey(collection: "User", id: "u1")
    var applier: OperationApplier { OperationApplier(partition: partition) }

    /// Applies operations to one object with the given body and returns its body after.
    func body(after operations: [SyncOperation], from body: [String: JSONValue]?) throws(SyncError) -> [String: JSONValue]? {
        let current: [ObjectKey: DocumentState] = body.map { [key: .live($0)] } ?? [:]
        let changes = try applier.apply(operations, to: current)
        guard let change = changes.first(where: { $0.key == key }) else { return body }
        return change.after.body
    }

    func code(of operations: [SyncOperation], from body: [String: JSONValue]?) -> SyncError.Code? {
        do {
            _ = try self.body(after: operations, from: body)
            return nil
        } catch {
            return error.code
        }
    }

    func path(_ text: String) -> Path { try! Path(parsing: text) }

    var base: [String: JSONValue] {
        [
            "_id": "u1", "partition": "user=u1", "name": "Ann", "count": 1, "tags": ["a", "b", "a"],
            "conversations": [["id": "c-1", "unreadCount": 2], ["id": "c-2", "unreadCount": 0]],
            "nested": ["deep": ["x": 1]],
        ]
    }

    @Test("put creates with _id and partition set by the engine")
    func putCreates() throws {
        let after = try body(after: [.put(key, body: ["name": "Ann"])], from: nil)
        #expect(after == ["_id": "u1", "partition": "user=u1", "name": "Ann"])
    }

    @Test("put on an existing object sets each top-level field and keeps the others")
    func putMerges() throws {
        let after = try body(after: [.put(key, body: ["name": "Bob", "new": [1]])], from: base)
        var expected = base
        expected["name"] = "Bob"
        expected["new"] = [1]
        #expect(after == expected)
    }

    @Test("put refuses a body naming another id or partition")
    func putIdentity() {
        #expect(code(of: [.put(key, body: ["_id": "other"])], from: nil) == .invalidOperation)
        #expect(code(of: [.put(key, body: ["partition": "user=u2"])], from: nil) == .partitionMismatch)
        #expect(code(of: [.put(key, body: ["_id": "u1", "partition": "user=u1"])], from: nil) == nil)
    }

    @Test("set: fields, nested fields created on the way, indexes and selectors")
    func set() throws {
        var after = try body(after: [.set(key, path: path("name"), value: "Cy")], from: base)
        #expect(after?["name"] == "Cy")
        after = try body(after: [.set(key, path: path("a.b.c"), value: 1)], from: base)
        #expect(after?["a"] == ["b": ["c": 1]])
        after = try body(after: [.set(key, path: path("tags[1]"), value: "z")], from: base)
        #expect(after?["tags"] == ["a", "z", "a"])
        after = try body(after: [.set(key, path: path("conversations[id=c-2].unreadCount"), value: 7)], from: base)
        #expect(after?["conversations"] == [["id": "c-1", "unreadCount": 2], ["id": "c-2", "unreadCount": 7]])
        after = try body(after: [.set(key, path: path("conversations[id=c-1]"), value: ["id": "c-1"])], from: base)
        #expect(after?["conversations"]?.arrayValue?.first == ["id": "c-1"])
        after = try body(after: [.set(key, path: path("nested.deep.x"), value: ["y": nil])], from: base)
        #expect(after?["nested"] == ["deep": ["x": ["y": nil]]])
    }

    @Test("set errors: missing element, wrong kind on the way")
    func setErrors() {
        #expect(code(of: [.set(key, path: path("tags[3]"), value: 1)], from: base) == .pathNotFound)
        #expect(code(of: [.set(key, path: path("conversations[id=c-9].unreadCount"), value: 1)], from: base) == .pathNotFound)
        #expect(code(of: [.set(key, path: path("missing[0]"), value: 1)], from: base) == .pathNotFound)
        #expect(code(of: [.set(key, path: path("name.first"), value: 1)], from: base) == .typeMismatch)
        #expect(code(of: [.set(key, path: path("name[0]"), value: 1)], from: base) == .typeMismatch)
        #expect(code(of: [.set(key, path: path("nested[id=x]"), value: 1)], from: base) == .typeMismatch)
    }

    @Test("unset removes fields and elements; absent paths are left alone")
    func unset() throws {
        var after = try body(after: [.unset(key, path: path("name"))], from: base)
        #expect(after?["name"] == nil)
        after = try body(after: [.unset(key, path: path("tags[0]"))], from: base)
        #expect(after?["tags"] == ["b", "a"])
        after = try body(after: [.unset(key, path: path("conversations[id=c-1]"))], from: base)
        #expect(after?["conversations"] == [["id": "c-2", "unreadCount": 0]])
        after = try body(after: [.unset(key, path: path("nested.deep.x"))], from: base)
        #expect(after?["nested"] == ["deep": [:]])
        for absent in ["nope", "nope.deeper", "tags[10]", "conversations[id=zz]", "nested.other.x"] {
            #expect(try body(after: [.unset(key, path: path(absent))], from: base) == base, "\(absent)")
        }
        #expect(code(of: [.unset(key, path: path("name.x"))], from: base) == .typeMismatch)
    }

    @Test("increment: integers stay exact, doubles mix, a missing field counts as 0")
    func increment() throws {
        var after = try body(after: [.increment(key, path: path("count"), by: 2)], from: base)
        #expect(after?["count"] == .int(3))
        after = try body(after: [.increment(key, path: path("count"), by: 0.5)], from: base)
        #expect(after?["count"] == .double(1.5))
        after = try body(after: [.increment(key, path: path("fresh.n"), by: -4)], from: base)
        #expect(after?["fresh"] == ["n": -4])
        after = try body(after: [.increment(key, path: path("conversations[id=c-1].unreadCount"), by: 1)], from: base)
        #expect(after?["conversations"]?.arrayValue?.first?["unreadCount"] == 3)
        #expect(code(of: [.increment(key, path: path("name"), by: 1)], from: base) == .typeMismatch)
        var big = base
        big["count"] = .int(.max)
        #expect(code(of: [.increment(key, path: path("count"), by: 1)], from: big) == .invalidOperation)
        big["count"] = .double(1.7e308)
        #expect(code(of: [.increment(key, path: path("count"), by: 1.7e308)], from: big) == .invalidOperation)
    }

    @Test("arrayAppend appends, creating a missing array")
    func arrayAppend() throws {
        var after = try body(after: [.arrayAppend(key, path: path("tags"), value: "c")], from: base)
        #expect(after?["tags"] == ["a", "b", "a", "c"])
        after = try body(after: [.arrayAppend(key, path: path("list"), value: ["x": 1])], from: base)
        #expect(after?["list"] == [["x": 1]])
        #expect(code(of: [.arrayAppend(key, path: path("name"), value: 1)], from: base) == .typeMismatch)
    }

    @Test("arrayRemove removes equal elements, or elements including an object's fields")
    func arrayRemove() throws {
        var after = try body(after: [.arrayRemove(key, path: path("tags"), match: "a")], from: base)
        #expect(after?["tags"] == ["b"])
        after = try body(after: [.arrayRemove(key, path: path("conversations"), match: ["id": "c-2"])], from: base)
        #expect(after?["conversations"] == [["id": "c-1", "unreadCount": 2]])
        after = try body(after: [.arrayRemove(key, path: path("missing"), match: 1)], from: base)
        #expect(after == base)
        var numbers = base
        numbers["n"] = [1, 1.0, 2]
        after = try body(after: [.arrayRemove(key, path: path("n"), match: 1)], from: numbers)
        #expect(after?["n"] == [2])
        #expect(code(of: [.arrayRemove(key, path: path("name"), match: 1)], from: base) == .typeMismatch)
    }

    @Test("_id and partition cannot be changed")
    func immutable() {
        for text in ["_id", "partition", "partition.x"] {
            #expect(code(of: [.set(key, path: path(text), value: "x")], from: base) == .immutableField)
            #expect(code(of: [.unset(key, path: path(text))], from: base) == .immutableField)
        }
    }

    @Test("delete makes a tombstone and drops later operations on the object")
    func delete() throws {
        let changes = try applier.apply(
            [.delete(key), .set(key, path: path("name"), value: "x"), .put(key, body: ["a": 1])], to: [key: .live(base)])
        #expect(changes.count == 1)
        #expect(changes[0].after == .deleted)
        #expect(changes[0].encodedBody == nil)
    }

    @Test("operations other than put on an absent object are not_found; on a deleted one they are dropped")
    func absentAndDeleted() throws {
        #expect(code(of: [.set(key, path: path("a"), value: 1)], from: nil) == .notFound)
        let dropped = try applier.apply([.set(key, path: path("a"), value: 1)], to: [key: .deleted])
        #expect(dropped.isEmpty)
        let revived = try applier.apply([.put(key, body: ["a": 1])], to: [key: .deleted])
        #expect(revived.first?.after == .live(["_id": "u1", "partition": "user=u1", "a": 1]))
        #expect(try applier.apply([.delete(key)], to: [:]).isEmpty)
    }

    @Test("operations apply in order and unchanged objects are left out")
    func ordering() throws {
        let other = try ObjectKey(collection: "User", id: "u2")
        let changes = try applier.apply(
            [
                .put(key, body: ["n": 1]), .increment(key, path: path("n"), by: 1), .set(key, path: path("n"), value: 10),
                .set(other, path: path("name"), value: "same"),
            ], to: [other: .live(["_id": "u2", "partition": "user=u1", "name": "same"])])
        #expect(changes.map(\.key) == [key])
        #expect(changes[0].after.body?["n"] == 10)
    }

    @Test("limits: body size, depth, NUL characters and operation count")
    func limits() throws {
        let small = OperationApplier(partition: partition, limits: Limits(maximumBodyBytes: 100, maximumDepth: 3, maximumOperations: 2))
        #expect(errorCode { try small.apply([.put(key, body: ["s": .string(String(repeating: "x", count: 100))])], to: [:]) } == .payloadTooLarge)
        #expect(errorCode { try small.apply([.put(key, body: ["a": ["b": ["c": [:]]]])], to: [:]) } == .jsonTooDeep)
        #expect(errorCode { try small.apply([.put(key, body: ["a": ["b": [:]]])], to: [:]) } == nil)
        #expect(errorCode { try small.apply(Array(repeating: .delete(key), count: 3), to: [:]) } == .tooManyOperations)
        #expect(errorCode { try applier.apply([.put(key, body: ["a": "x\u{0}y"])], to: [:]) } == .invalidOperation)
        #expect(errorCode { try applier.apply([.put(key, body: ["a\u{0}": 1])], to: [:]) } == .invalidOperation)
    }

    @Test("one operation alone gives the change it gives in a list beside an operation on another object, whatever the state")
    func oneOperationAsInAList() throws {
        let other = try ObjectKey(collection: "User", id: "u2")
        let states: [DocumentState] = [.absent, .deleted, .live(base), .live(["_id": "u1", "partition": "user=u1", "n": 1])]
        let operations: [SyncOperation] = [
            .put(key, body: ["a": 1]), .put(key, body: base), .delete(key), .set(key, path: path("n"), value: 2),
            .unset(key, path: path("n")), .increment(key, path: path("n"), by: 1),
        ]
        for state in states {
            let current: [ObjectKey: DocumentState] = state == .absent ? [:] : [key: state]
            for operation in operations {
                let alone = Result { () throws(SyncError) in try applier.apply([operation], to: current) }
                let listed = Result { () throws(SyncError) in
                    try applier.apply([operation, .put(other, body: ["b": 1])], to: current).filter { $0.key == key }
                }
                #expect(alone == listed, "\(operation) on \(state)")
            }
        }
    }
}
