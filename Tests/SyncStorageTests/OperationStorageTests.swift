import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// Every operation and path form applied through the storage engine, asserting what is stored.
@Suite("Operations stored in PostgreSQL", .timeLimit(.minutes(30)))
struct OperationStorageTests {
    let user = partition("user=u1")
    let record = key("User", "u1")
    let initial: [String: JSONValue] = [
        "name": "Ann", "count": 1, "tags": ["a", "b", "a"],
        "conversations": [["id": "c-1", "unreadCount": 2], ["id": "c-2", "unreadCount": 0]],
    ]

    /// Stores the initial record, applies `operations`, returns the stored body.
    func stored(after operations: [SyncOperation]) async throws -> [String: JSONValue]? {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.apply([.put(record, body: initial)], in: user)
            try await store.apply(operations, in: user)
            return try await store.body(of: record)
        }
    }

    @Test("put creates the object with _id and partition, then merges top-level fields")
    func put() async throws {
        let body = try await stored(after: [.put(record, body: ["name": "Bo", "extra": ["x": 1.5]])])
        #expect(body?["_id"] == "u1")
        #expect(body?["partition"] == "user=u1")
        #expect(body?["name"] == "Bo")
        #expect(body?["extra"] == ["x": 1.5])
        #expect(body?["count"] == 1)
    }

    @Test(
        "set on every path form",
        arguments: [
            ("name", JSONValue.string("Cy"), "name", JSONValue.string("Cy")),
            ("a.b", JSONValue.int(1), "a", JSONValue.object(["b": 1])),
            ("tags[1]", JSONValue.string("z"), "tags", JSONValue.array(["a", "z", "a"])),
            ("conversations[id=c-2].unreadCount", JSONValue.int(5), "conversations",
             JSONValue.array([["id": "c-1", "unreadCount": 2], ["id": "c-2", "unreadCount": 5]])),
        ] as [(String, JSONValue, String, JSONValue)])
    func set(pathText: String, value: JSONValue, field: String, expected: JSONValue) async throws {
        let body = try await stored(after: [.set(record, path: path(pathText), value: value)])
        #expect(body?[field] == expected)
    }

    @Test("unset, increment, arrayAppend and arrayRemove")
    func fieldOperations() async throws {
        let body = try await stored(after: [
            .unset(record, path: path("name")),
            .unset(record, path: path("tags[0]")),
            .increment(record, path: path("count"), by: 41),
            .increment(record, path: path("conversations[id=c-1].unreadCount"), by: 1),
            .increment(record, path: path("score"), by: 0.5),
            .arrayAppend(record, path: path("tags"), value: "c"),
            .arrayAppend(record, path: path("fresh"), value: ["k": "v"]),
            .arrayRemove(record, path: path("tags"), match: "a"),
            .arrayRemove(record, path: path("conversations"), match: ["id": "c-2"]),
        ])
        #expect(body?["name"] == nil)
        #expect(body?["count"] == .int(42))
        #expect(body?["score"] == .double(0.5))
        #expect(body?["tags"] == ["b", "c"])
        #expect(body?["fresh"] == [["k": "v"]])
        #expect(body?["conversations"] == [["id": "c-1", "unreadCount": 3]])
    }

    @Test("delete leaves a tombstone that a catch-up delivers and a snapshot leaves out")
    func delete() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let first = try await store.apply([.put(record, body: initial)], in: user)
            let deleted = try await store.apply([.delete(record), .set(record, path: path("name"), value: "x")], in: user)
            #expect(deleted.version == first.version + 1)
            let stored = try await store.objects([record])
            #expect(stored.first?.object.isDeleted == true)
            #expect(stored.first?.object.version == deleted.version)
            let catchUp = try await store.changes(in: user, after: first.cursor)
            #expect(catchUp.objects.map(\.isDeleted) == [true])
            #expect(!catchUp.reset)
            let snapshot = try await store.changes(in: user, after: nil)
            #expect(snapshot.objects.isEmpty)
            #expect(snapshot.upToDate)
            // Operations on the deleted object are dropped; put creates it again.
            try await store.apply([.set(record, path: path("name"), value: "y")], in: user)
            #expect(try await store.objects([record]).first?.object.isDeleted == true)
            try await store.apply([.put(record, body: ["name": "again"])], in: user)
            #expect(try await store.body(of: record) == ["_id": "u1", "partition": "user=u1", "name": "again"])
        }
    }

    @Test(
        "operation errors come back with their codes and write nothing",
        arguments: [
            (SyncOperation.set(key("User", "u1"), path: path("tags[9]"), value: 1), SyncError.Code.pathNotFound),
            (.set(key("User", "u1"), path: path("conversations[id=nope].x"), value: 1), .pathNotFound),
            (.set(key("User", "u1"), path: path("name.first"), value: 1), .typeMismatch),
            (.increment(key("User", "u1"), path: path("name"), by: 1), .typeMismatch),
            (.arrayAppend(key("User", "u1"), path: path("count"), value: 1), .typeMismatch),
            (.set(key("User", "u1"), path: path("_id"), value: "u2"), .immutableField),
            (.unset(key("User", "u1"), path: path("partition")), .immutableField),
            (.set(key("User", "nobody"), path: path("x"), value: 1), .notFound),
            (.put(key("User", "u1"), body: ["partition": "user=u2"]), .partitionMismatch),
            (.put(key("User", "u1"), body: ["_id": "u2"]), .invalidOperation),
        ])
    func errors(operation: SyncOperation, code: SyncError.Code) async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let first = try await store.apply([.put(record, body: initial)], in: user)
            let before = try await store.body(of: record)
            #expect(await errorCode { try await store.apply([.set(record, path: path("name"), value: "changed"), operation], in: user) } == code)
            #expect(try await store.body(of: record) == before)
            #expect(try await store.headVersion(of: user) == first.version)
        }
    }

    @Test("an object of another partition is absent to this one: edits are not_found, a delete does nothing, a put is partition_mismatch")
    func otherPartition() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.apply([.put(record, body: initial)], in: user)
            let other = partition("user=u2")
            let own = key("User", "u2")
            // The same answers as for an id nobody used, so the existence of `record` does not show.
            let unused = key("User", "nobody")
            for target in [record, unused] {
                #expect(await errorCode { try await store.apply([.put(own, body: [:]), .set(target, path: path("name"), value: "x")], in: other) } == .notFound)
                #expect(await errorCode { try await store.apply([.increment(target, path: path("n"), by: 1)], in: other) } == .notFound)
            }
            #expect(await errorCode { try await store.apply([.put(record, body: ["name": "x"])], in: other) } == .partitionMismatch)
            #expect(try await store.headVersion(of: other) == 0)
            #expect(try await store.body(of: own) == nil)
            try await store.apply([.delete(record)], in: other)
            try await store.apply([.delete(unused)], in: other)
            #expect(try await store.body(of: record)?["name"] == "Ann")
        }
    }

    @Test("a tombstone keeps its partition: recreating it elsewhere is refused")
    func tombstonePartition() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.apply([.put(record, body: initial)], in: user)
            try await store.apply([.delete(record)], in: user)
            #expect(await errorCode { try await store.apply([.put(record, body: [:])], in: partition("user=u2")) } == .partitionMismatch)
        }
    }
}
