import PartitionSync
import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

@Suite("Deferred writes", .timeLimit(.minutes(30)))
struct DeferredWriteTests {
    static let countQuery: PostgresQuery = "SELECT (body->>'count')::bigint FROM psync_objects WHERE collection = 'Counter' AND id = 'k'"

    /// The stored count of Counter `k`, read with SQL.
    static func storedCount(_ rows: PostgresRowSequence) async throws -> Int64? {
        for try await value in rows.decode(Int64?.self) { return value }
        return nil
    }

    static let room = partition("counters=all")
    static let counter = key("Counter", "k")

    /// Runs `body` with a database holding Counter `k` at 0.
    static func withCounter(_ body: @escaping @Sendable (TestDatabase, ObjectStore) async throws -> Void) async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.apply([.put(counter, body: ["count": 0])], in: room)
            try await body(db, store)
        }
    }

    /// Runs `body` in a write transaction that defers its writes.
    static func deferring(_ store: ObjectStore, _ body: (WriteTransaction) async throws -> Void) async throws {
        try await store.withWriteTransaction(author: "tester") { transaction in
            transaction.defersWrites = true
            try await body(transaction)
        }
    }

    @Test("a deferring transaction writes an object changed many times once, at commit, with an event per change at its depth")
    func writtenOnceAtCommit() async throws {
        try await Self.withCounter { db, store in
            let (room, counter) = (Self.room, Self.counter)
            try await Self.deferring(store) { transaction in
                for step in 1...3 {
                    transaction.depth = step
                    try await transaction.apply([.increment(counter, path: path("count"), by: 1)], in: room)
                }
                // Reads see the staged state; the table does not have it yet.
                #expect(try await transaction.load([counter])[counter]?.state.body?["count"] == 3)
                #expect(try await Self.storedCount(try await transaction.connection.query(Self.countQuery, logger: db.logger)) == 0)
            }
            #expect(try await Self.storedCount(try await db.client.query(Self.countQuery, logger: db.logger)) == 3)
            let log = EventLog(store: store)
            try await log.sequence()
            let events = try await log.events(after: 1, limit: 10)
            #expect(events.map { $0.after?["count"] } == [1, 2, 3])
            #expect(events.map(\.depth) == [1, 2, 3])
            #expect(events.map(\.author) == ["tester", "tester", "tester"])
            let snapshot = try await store.changes(in: room, after: nil)
            #expect(snapshot.objects.first?.body?["count"] == 3)
        }
    }

    @Test("searches in a deferring transaction see its own changes: objects that stop matching leave, new matches join")
    func searchesSeeStagedChanges() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let people = partition("people=all")
            try await store.apply([
                .put(key("Person", "a"), body: ["rooms": [["id": "r1"]], "name": "ann"]),
                .put(key("Person", "b"), body: ["rooms": [["id": "r1"]], "name": "bob"]),
                .put(key("Person", "c"), body: ["rooms": [["id": "r2"]], "name": "cat"]),
            ], in: people)
            try await store.withWriteTransaction(author: "tester") { transaction in
                transaction.defersWrites = true
                func inRoom() async throws -> [String] {
                    try await transaction.find(.array("Person", path: "rooms", contains: ["id": "r1"])).map(\.object.key.id)
                }
                #expect(try await inRoom() == ["a", "b"])
                try await transaction.apply([
                    .put(key("Person", "b"), body: ["rooms": [["id": "r2"]], "name": "bob"]),
                    .arrayAppend(key("Person", "c"), path: path("rooms"), value: ["id": "r1", "since": 2]),
                    .put(key("Person", "d"), body: ["rooms": [["id": "r1"]], "name": "dan"]),
                ], in: people)
                #expect(try await inRoom() == ["a", "c", "d"])
                try await transaction.apply([.delete(key("Person", "a"))], in: people)
                #expect(try await inRoom() == ["c", "d"])
                let found = try await transaction.find(.field("Person", path: "name", in: ["bob", "dan", "ann"]))
                #expect(found.map(\.object.key.id) == ["b", "d"])
                #expect(found.allSatisfy { $0.partition == people })
            }
            // Committed, a plain transaction's search finds the same.
            try await store.withWriteTransaction(author: "tester") { transaction in
                let found = try await transaction.find(.array("Person", path: "rooms", contains: ["id": "r1"]))
                #expect(found.map(\.object.key.id).sorted() == ["c", "d"])
            }
        }
    }

    @Test("a savepoint writes staged changes first, and its rollback forgets what it changed")
    func savepoints() async throws {
        try await Self.withCounter { db, store in
            let (room, counter) = (Self.room, Self.counter)
            try await Self.deferring(store) { transaction in
                try await transaction.apply([.increment(counter, path: path("count"), by: 1)], in: room)
                struct Refused: Error {}
                await #expect(throws: Refused.self) {
                    try await transaction.withSavepoint {
                        #expect(try await Self.storedCount(try await transaction.connection.query(Self.countQuery, logger: db.logger)) == 1)
                        try await transaction.apply([.increment(counter, path: path("count"), by: 10)], in: room)
                        #expect(try await transaction.find(.field("Counter", path: "count", in: ["11"])).count == 1)
                        throw Refused()
                    }
                }
                #expect(try await transaction.find(.field("Counter", path: "count", in: ["11"])).isEmpty)
                #expect(try await transaction.load([counter])[counter]?.state.body?["count"] == 1)
            }
            #expect(try await Self.storedCount(try await db.client.query(Self.countQuery, logger: db.logger)) == 1)
        }
    }
}
