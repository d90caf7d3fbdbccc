import Foundation
import PartitionSync
import PostgresNIO
import SyncProtocol
@testable import SyncStorage
import SyncTesting
import Testing

/// Declared counters raised beside the bodies (migration 0018): the body neither read nor
/// written, every read with the counters laid in, every write of the body taking them in, and
/// every case the operations answer themselves answered as they do.
@Suite("Counters beside the bodies", .timeLimit(.minutes(30)))
struct CounterStorageTests {
    static let unread = ObjectCounter.arrayElements(collection: "User", path: "conversations", selectedBy: "id", field: "unreadCount")
    static let indexes: [ObjectIndex] = [
        .field(collection: "User", path: "userName"), .arrayElements(collection: "User", path: "conversations", field: "id"),
    ]

    /// A store declaring RChat's counter and indexes, raising apart (unless `apart` is false),
    /// with users `u0`…: each lists rooms `r1` and `r2` (unread 0) and some padding.
    static func withUsers(
        _ count: Int = 3, apart: Bool = true, configuration: StorageConfiguration = .init(),
        _ body: @escaping @Sendable (TestDatabase, ObjectStore) async throws -> Void
    ) async throws {
        try await TestDatabase.with { db in
            let store = db.store(configuration)
            try await store.createIndexes(indexes)
            try store.declareCounters([unread], indexes: indexes)
            store.raisesCountersApart(apart)
            for n in 0..<count {
                try await store.apply([.put(user(n), body: [
                    "userName": .string("u\(n)@example.com"),
                    "conversations": [
                        ["id": "r1", "displayName": "One", "unreadCount": 0, "members": [["userName": "a"], ["userName": "b"]]],
                        ["id": "r2", "displayName": "Two", "unreadCount": 0],
                    ],
                    "padding": .string(String(repeating: "x", count: 4_000)),
                ])], in: userPartition(n))
            }
            try await body(db, store)
        }
    }

    static func user(_ n: Int) -> ObjectKey { key("User", "u\(n)") }
    static func userPartition(_ n: Int) -> Partition { partition("user=u\(n)") }
    static func raise(_ n: Int, _ room: String, by: Int64 = 1) -> SyncOperation {
        .increment(user(n), path: path("conversations[id=\(room)].unreadCount"), by: .int(by))
    }

    /// Raises as a trigger would: many partitions in one apply.
    @discardableResult
    static func trigger(_ store: ObjectStore, _ operations: [Partition: [SyncOperation]]) async throws -> Int {
        try await store.withWriteTransaction(author: "trigger:test", depth: 1) { try await $0.apply(operations) }
    }

    static func unreadCount(_ body: [String: JSONValue]?, _ room: String) -> Int64? {
        body?["conversations"]?.arrayValue?.first { $0["id"] == .string(room) }?["unreadCount"]?.intValue
    }

    /// How many counters user `n` keeps, in its row of counters or (as a build of 0018 kept
    /// them) in its object's row.
    static func kept(_ db: TestDatabase, _ n: Int) async throws -> Int64 {
        try await db.scalar("""
            SELECT (SELECT count(*) FROM psync_counters k, jsonb_object_keys(k.counters) WHERE k.id = 'u\(n)')
                 + (SELECT count(*) FROM psync_objects o, jsonb_object_keys(o.counters) WHERE o.id = 'u\(n)')
            """)
    }

    /// The unread count of `room` as the body column holds it, without the counters.
    static func storedCount(_ db: TestDatabase, _ n: Int, _ room: String) async throws -> Int64 {
        try await db.scalar("""
            SELECT (e->>'unreadCount')::bigint FROM psync_objects, jsonb_array_elements(body->'conversations') e
            WHERE id = 'u\(n)' AND e->>'id' = '\(room)'
            """)
    }

    static func events(_ db: TestDatabase) async throws -> Int64 {
        try await db.scalar("SELECT count(*)::bigint FROM psync_events WHERE kind = 'object' AND collection = 'User'")
    }

    @Test("a raise writes the counters beside the body, which keeps its stored value; every read lays them in; no event, no element entry, a new version")
    func beside() async throws {
        try await Self.withUsers { db, store in
            let eventsBefore = try await Self.events(db)
            let entriesBefore = try await db.scalar("SELECT count(*)::bigint FROM psync_element_entries")
            let bodyBefore = try await db.rows("SELECT body::text FROM psync_objects WHERE id = 'u0'")
            let versionBefore = try await store.headVersion(of: Self.userPartition(0))
            var operations: [Partition: [SyncOperation]] = [:]
            for n in 0..<3 { operations[Self.userPartition(n)] = [Self.raise(n, "r1", by: 2), Self.raise(n, "r2")] }
            #expect(try await Self.trigger(store, operations) == 3)
            #expect(try await Self.trigger(store, [Self.userPartition(0): [Self.raise(0, "r1", by: 5)]]) == 1)

            // The body column as it was; the counters beside it.
            #expect(try await db.rows("SELECT body::text FROM psync_objects WHERE id = 'u0'") == bodyBefore)
            #expect(try await Self.storedCount(db, 0, "r1") == 0)
            #expect(try await Self.kept(db, 0) == 2)
            #expect(try await Self.events(db) == eventsBefore)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_element_entries") == entriesBefore)

            // Every read: a snapshot page and a catch-up, the wire form, an object read, a
            // transaction's read and search, the console's listing.
            let snapshot = try await store.changes(in: Self.userPartition(0), after: nil)
            #expect(Self.unreadCount(snapshot.objects.first?.body, "r1") == 7)
            #expect(Self.unreadCount(snapshot.objects.first?.body, "r2") == 1)
            #expect(snapshot.version == versionBefore + 2)
            #expect(snapshot.objects.first?.version == versionBefore + 2)
            let caughtUp = try await store.changes(in: Self.userPartition(1), after: nil)
            #expect(Self.unreadCount(caughtUp.objects.first?.body, "r1") == 2)
            let page = try await store.encodedPage(in: Self.userPartition(0), from: nil)
            let text = String(decoding: page.batch.objectsJSON ?? [], as: UTF8.self)
            #expect(text.contains(#""unreadCount":7"#))
            #expect(Self.unreadCount(try await store.body(of: Self.user(0)), "r1") == 7)
            try await store.withWriteTransaction(author: "reader") { transaction in
                let loaded = try await transaction.load([Self.user(0)])
                #expect(Self.unreadCount(loaded[Self.user(0)]?.state.body, "r1") == 7)
                let found = try await transaction.find(.array("User", path: "conversations", field: "id", is: "r2"))
                #expect(found.count == 3)
                #expect(found.allSatisfy { Self.unreadCount($0.object.body, "r2") == 1 })
                let named = try await transaction.find(.field("User", path: "userName", in: ["u2@example.com"]))
                #expect(Self.unreadCount(named.first?.object.body, "r1") == 2)
            }
            let listed = try await AdminQueries(store: store).objects(in: Self.userPartition(0), collection: "User", after: nil, limit: 10)
            #expect(Self.unreadCount(listed.first?.body, "r1") == 7)
            // The view for reading by hand and by scripts.
            #expect(try await db.scalar("SELECT (body #>> '{conversations,0,unreadCount}')::bigint FROM psync_served_objects WHERE id = 'u0'") == 7)
            #expect(try await db.scalar("SELECT version FROM psync_served_objects WHERE id = 'u0'") == versionBefore + 2)
        }
    }

    @Test("a write of the body takes the counters in and keeps none beside it; a raise after it starts again")
    func bodyWrites() async throws {
        try await Self.withUsers(1) { db, store in
            try await Self.trigger(store, [Self.userPartition(0): [Self.raise(0, "r1", by: 3)]])
            // A client's write of another field, and a put of the whole record.
            try await store.apply([.set(Self.user(0), path: path("presence"), value: "On-Line")], in: Self.userPartition(0))
            #expect(try await Self.kept(db, 0) == 0)
            #expect(try await Self.storedCount(db, 0, "r1") == 3)
            try await Self.trigger(store, [Self.userPartition(0): [Self.raise(0, "r1")]])
            #expect(try await Self.kept(db, 0) == 1)
            #expect(Self.unreadCount(try await store.body(of: Self.user(0)), "r1") == 4)
            // The client resets its count: the record written whole, the count 0.
            try await store.apply([.set(Self.user(0), path: path("conversations[id=r1].unreadCount"), value: 0)], in: Self.userPartition(0))
            #expect(try await Self.kept(db, 0) == 0)
            #expect(Self.unreadCount(try await store.body(of: Self.user(0)), "r1") == 0)
            // A room removed and listed again in another place: a raise resolves it anew.
            try await store.apply([
                .arrayRemove(Self.user(0), path: path("conversations"), match: ["id": "r1"]),
                .arrayAppend(Self.user(0), path: path("conversations"), value: ["id": "r1", "unreadCount": 10]),
            ], in: Self.userPartition(0))
            try await Self.trigger(store, [Self.userPartition(0): [Self.raise(0, "r1")]])
            let body = try await store.body(of: Self.user(0))
            #expect(body?["conversations"]?.arrayValue?.map { $0["id"] } == ["r2", "r1"])
            #expect(Self.unreadCount(body, "r1") == 11)
            #expect(Self.unreadCount(body, "r2") == 0)
            // A deletion leaves nothing beside the tombstone.
            try await store.apply([.delete(Self.user(0))], in: Self.userPartition(0))
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_objects WHERE counters IS NOT NULL OR counted") == 0)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_counters") == 0)
        }
    }

    @Test("every case the operations answer themselves is applied to the whole body, with their answers, silently: not stored, deleted, another partition, no such room, not a number, a double, an overflow, a missing field")
    func whole() async throws {
        try await Self.withUsers(2) { db, store in
            let events = try await Self.events(db)
            let (p0, p1) = (Self.userPartition(0), Self.userPartition(1))
            // Not stored, and an object of another partition: not_found, as for any edit.
            #expect(await errorCode { try await Self.trigger(store, [partition("user=nobody"): [.increment(key("User", "nobody"), path: path("conversations[id=r1].unreadCount"), by: 1)]]) } == .notFound)
            #expect(await errorCode { try await Self.trigger(store, [p1: [Self.raise(0, "r1")]]) } == .notFound)
            // No such room: path_not_found; a count that is not a number: type_mismatch.
            #expect(await errorCode { try await Self.trigger(store, [p0: [Self.raise(0, "r9")]]) } == .pathNotFound)
            try await store.apply([.set(Self.user(1), path: path("conversations[id=r2].unreadCount"), value: "many")], in: p1)
            #expect(await errorCode { try await Self.trigger(store, [p1: [Self.raise(1, "r2")]]) } == .typeMismatch)
            // Near the end of 64 bits: invalid_operation, and nothing of the apply is written.
            try await store.apply([.set(Self.user(0), path: path("conversations[id=r2].unreadCount"), value: .int(.max))], in: p0)
            #expect(await errorCode { try await Self.trigger(store, [p0: [Self.raise(0, "r1"), Self.raise(0, "r2")]]) } == .invalidOperation)
            #expect(Self.unreadCount(try await store.body(of: Self.user(0)), "r1") == 0)
            let eventsAfterSetup = try await Self.events(db)
            #expect(eventsAfterSetup == events + 2)
            // A double: the sum is a double, in the body; a missing count is created.
            try await store.apply([
                .set(Self.user(1), path: path("conversations[id=r2].unreadCount"), value: .double(1.5)),
                .unset(Self.user(1), path: path("conversations[id=r1].unreadCount")),
            ], in: p1)
            try await Self.trigger(store, [p1: [Self.raise(1, "r2", by: 2), Self.raise(1, "r1", by: 4)]])
            let body = try await store.body(of: Self.user(1))
            #expect(body?["conversations"]?.arrayValue?.first { $0["id"] == "r2" }?["unreadCount"] == .double(3.5))
            #expect(Self.unreadCount(body, "r1") == 4)
            #expect(try await Self.kept(db, 1) == 0)
            // A deleted record: the raise is dropped.
            try await store.apply([.delete(Self.user(0))], in: p0)
            #expect(try await Self.trigger(store, [p0: [Self.raise(0, "r1")]]) == 0)
            // The raises applied whole made no events either (two client writes since did).
            #expect(try await Self.events(db) == eventsAfterSetup + 2)
        }
    }

    @Test("at most countersPerObject kept: the raise past it writes the body whole with all of them, and keeps none; 0 keeps none ever")
    func limit() async throws {
        try await Self.withUsers(1, configuration: StorageConfiguration(countersPerObject: 1)) { db, store in
            let p0 = Self.userPartition(0)
            try await Self.trigger(store, [p0: [Self.raise(0, "r1")]])
            try await Self.trigger(store, [p0: [Self.raise(0, "r1")]])
            #expect(try await Self.kept(db, 0) == 1)
            #expect(try await Self.storedCount(db, 0, "r1") == 0)
            try await Self.trigger(store, [p0: [Self.raise(0, "r2")]])
            #expect(try await Self.kept(db, 0) == 0)
            #expect(try await Self.storedCount(db, 0, "r1") == 2)
            #expect(try await Self.storedCount(db, 0, "r2") == 1)
        }
        try await Self.withUsers(1, configuration: StorageConfiguration(countersPerObject: 0)) { db, store in
            try await Self.trigger(store, [Self.userPartition(0): [Self.raise(0, "r1")]])
            #expect(try await Self.kept(db, 0) == 0)
            #expect(try await Self.storedCount(db, 0, "r1") == 1)
        }
    }

    @Test("while an earlier build may run, raises are written into the body, still without events")
    func notApart() async throws {
        try await Self.withUsers(1, apart: false) { db, store in
            let events = try await Self.events(db)
            try await Self.trigger(store, [Self.userPartition(0): [Self.raise(0, "r1", by: 2)]])
            #expect(try await Self.kept(db, 0) == 0)
            #expect(try await Self.storedCount(db, 0, "r1") == 2)
            #expect(try await Self.events(db) == events)
        }
    }

    @Test("in a deferring transaction: the object's staged change written first, the raise seen by later reads; a savepoint rolled back takes the raise back")
    func deferring() async throws {
        try await Self.withUsers(2) { db, store in
            let (p0, p1) = (Self.userPartition(0), Self.userPartition(1))
            try await store.withWriteTransaction(author: "trigger:test", depth: 1) { transaction in
                transaction.defersWrites = true
                try await transaction.apply([.set(Self.user(0), path: path("presence"), value: "Hidden")], in: p0)
                try await transaction.apply([p0: [Self.raise(0, "r1", by: 4)], p1: [Self.raise(1, "r1")]])
                let loaded = try await transaction.load([Self.user(0)])
                #expect(loaded[Self.user(0)]?.state.body?["presence"] == "Hidden")
                #expect(Self.unreadCount(loaded[Self.user(0)]?.state.body, "r1") == 4)
                let found = try await transaction.find(.array("User", path: "conversations", field: "id", is: "r1"))
                #expect(found.map { Self.unreadCount($0.object.body, "r1") } == [4, 1])
                await #expect(throws: SyncError.self) {
                    try await transaction.withSavepoint {
                        try await transaction.apply([p1: [Self.raise(1, "r1", by: 100)]])
                        throw SyncError(.validationFailed, "no")
                    }
                }
                #expect(Self.unreadCount(try await transaction.load([Self.user(1)])[Self.user(1)]?.state.body, "r1") == 1)
                // The commit names both partitions, without their changes: observers read them.
                #expect(Set(transaction.record.changedPartitions) == [p0, p1])
            }
            #expect(Self.unreadCount(try await store.body(of: Self.user(0)), "r1") == 4)
            #expect(Self.unreadCount(try await store.body(of: Self.user(1)), "r1") == 1)
            #expect(try await store.body(of: Self.user(0))?["presence"] == "Hidden")
            #expect(try await Self.kept(db, 1) == 1)
        }
    }

    @Test("concurrent transactions raising the same counters, beside and into the bodies, lose no increment")
    func concurrent() async throws {
        try await TestDatabase.with(maximumConnections: 12) { db in
            let store = db.store(StorageConfiguration(countersPerObject: 2))
            try await store.createIndexes(Self.indexes)
            try store.declareCounters([Self.unread], indexes: Self.indexes)
            store.raisesCountersApart(true)
            let rooms = ["r1", "r2", "r3"]
            for n in 0..<4 {
                try await store.apply([.put(Self.user(n), body: ["conversations": .array(rooms.map { ["id": .string($0), "unreadCount": 0] })])], in: Self.userPartition(n))
            }
            let writers = 6
            let rounds = 25
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for round in 0..<rounds {
                            let room = rooms[(writer + round) % rooms.count]
                            if writer == 0 && round % 5 == 0 {
                                // A client's write of the record now and then: the counters taken in.
                                try await store.apply([.set(Self.user(round % 4), path: path("seen"), value: .int(Int64(round)))], in: Self.userPartition(round % 4))
                            }
                            var operations: [Partition: [SyncOperation]] = [:]
                            for n in 0..<4 { operations[Self.userPartition(n)] = [Self.raise(n, room)] }
                            try await Self.trigger(store, operations)
                        }
                    }
                }
                try await group.waitForAll()
            }
            var expected: [String: Int64] = [:]
            for writer in 0..<writers { for round in 0..<rounds { expected[rooms[(writer + round) % rooms.count], default: 0] += 1 } }
            for n in 0..<4 {
                let body = try await store.body(of: Self.user(n))
                for room in rooms { #expect(Self.unreadCount(body, room) == expected[room], "u\(n) \(room)") }
            }
        }
    }

    @Test("a server counts the instances of earlier builds: none raises apart while one is alive")
    func earlierBuilds() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let registry = InstanceRegistry(store: store, instance: "new", lease: .seconds(30))
            _ = try await registry.beat()
            #expect(store.counters.apart)
            // This instance tells those of the builds of 0018 and 0019 not to raise counters
            // into the objects' rows, which it reads only as those builds left them.
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_instances WHERE name = 'new' AND NOT reads_counters AND reads_counter_rows") == 1)
            // An instance of one of those builds: its heartbeat sets reads_counters, and leaves
            // reads_counter_rows false.
            _ = try await db.scalar("WITH i AS (INSERT INTO psync_instances (name, expires_at, reads_counters) VALUES ('old', now() + interval '1 minute', true) RETURNING 1) SELECT count(*)::bigint FROM i")
            #expect(try await registry.beat() == 1)
            #expect(!store.counters.apart)
            _ = try await db.scalar("WITH i AS (DELETE FROM psync_instances WHERE name = 'old' RETURNING 1) SELECT count(*)::bigint FROM i")
            #expect(try await registry.beat() == 0)
            #expect(store.counters.apart)
        }
    }

    @Test("an element index's update trigger made before counters is remade to run only when the body is written, and keeps its entries")
    func elementTriggerUpgrade() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.createIndexes(Self.indexes)
            let index = Self.indexes[1].name
            func columnSpecific() async throws -> Int64 {
                try await db.scalar("SELECT cardinality(tgattr::int2[])::bigint FROM pg_trigger WHERE tgname = '\(index)_update'")
            }
            #expect(try await columnSpecific() == 1)
            // As a build before counters made it.
            try await db.client.query(PostgresQuery(unsafeSQL: "DROP TRIGGER \(index)_update ON psync_objects"), logger: db.logger)
            try await db.client.query(PostgresQuery(unsafeSQL: """
                CREATE TRIGGER \(index)_update AFTER UPDATE ON psync_objects FOR EACH ROW
                    WHEN (NEW.collection = 'User') EXECUTE FUNCTION psync_element_entries_sync('\(index)', '$."conversations"[*]."id"')
                """), logger: db.logger)
            #expect(try await columnSpecific() == 0)
            try await store.apply([.put(Self.user(0), body: ["conversations": [["id": "r1"]]])], in: Self.userPartition(0))
            try await store.createIndexes(Self.indexes)
            #expect(try await columnSpecific() == 1)
            try await store.apply([.set(Self.user(0), path: path("conversations"), value: [["id": "r2"]])], in: Self.userPartition(0))
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_element_entries WHERE value = '\"r2\"'") == 1)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_element_entries WHERE value = '\"r1\"'") == 0)
        }
    }

    /// Every page of a partition's changes after `cursor`, one object a page: the objects in
    /// order, the cursor after the last page and the version it is complete up to.
    static func drain(_ store: ObjectStore, _ partition: Partition, after cursor: Cursor?) async throws -> (objects: [SyncObject], cursor: Cursor, version: Int64) {
        var objects: [SyncObject] = []
        var cursor = cursor
        for _ in 0..<1_000 {
            let batch = try await store.changes(in: partition, after: cursor, limit: 1)
            objects += batch.objects
            cursor = batch.cursor
            if batch.upToDate { return (objects, batch.cursor, batch.version ?? -1) }
        }
        Issue.record("no end of the changes of \(partition)")
        return (objects, cursor!, -1)
    }

    @Test("a catch-up from each cursor gets every object changed since, once, at its latest version, in version order, pages of one object: objects with counters in rows of their own among the others")
    func catchUps() async throws {
        try await Self.withUsers(2) { db, store in
            let p = Self.userPartition(0)
            func note(_ n: Int) -> ObjectKey { key("Note", "n\(n)") }
            var marks = [try await Self.drain(store, p, after: nil)]
            func mark() async throws { marks.append(try await Self.drain(store, p, after: marks.last!.cursor)) }
            try await store.apply([.put(note(0), body: ["text": "a"])], in: p); try await mark()
            try await Self.trigger(store, [p: [Self.raise(0, "r1")], Self.userPartition(1): [Self.raise(1, "r1")]]); try await mark()
            try await store.apply([.put(note(1), body: ["text": "b"])], in: p); try await mark()
            try await Self.trigger(store, [p: [Self.raise(0, "r2")]]); try await mark()
            try await Self.trigger(store, [p: [Self.raise(0, "r1", by: 2)]])
            try await store.apply([.put(note(2), body: ["text": "c"]), .set(note(0), path: path("text"), value: "d")], in: p); try await mark()
            try await Self.trigger(store, [p: [Self.raise(0, "r2")]]); try await mark()
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_objects WHERE counted") == 2)

            // The whole partition, as a snapshot reads it: each object once, in version order.
            let all = try await Self.drain(store, p, after: nil)
            #expect(all.objects.count == 4)
            #expect(all.objects.map(\.version) == all.objects.map(\.version).sorted())
            #expect(all.objects.last?.key == Self.user(0))
            #expect(all.objects.last?.version == all.version)
            #expect(Self.unreadCount(all.objects.last?.body, "r1") == 3)
            #expect(Self.unreadCount(all.objects.last?.body, "r2") == 2)
            // From each cursor on the way: what changed since, and nothing else.
            for (n, start) in marks.enumerated() {
                let since = try await Self.drain(store, p, after: start.cursor)
                let expected = all.objects.filter { $0.version > start.version }
                #expect(since.objects.map(\.key) == expected.map(\.key), "from mark \(n) (version \(start.version))")
                #expect(since.objects.map(\.version) == expected.map(\.version), "from mark \(n)")
                #expect(since.version == all.version)
            }
            // Each step's catch-up took that step's changes alone.
            #expect(marks.dropFirst().map { $0.objects.map(\.key.id) } == [["n0"], ["u0"], ["n1"], ["u0"], ["u0", "n0", "n2"], ["u0"]])
        }
    }

    @Test("a raise writes the counters' row alone: the object's row once, at its first raise, and the next raise a heap-only update (no index entry)")
    func heapOnly() async throws {
        try await Self.withUsers(50) { db, store in
            let all = Dictionary(uniqueKeysWithValues: (0..<50).map { (Self.userPartition($0), [Self.raise($0, "r1")]) })
            func raiseCounting() async throws -> [String: Int64] {
                // The backend's counts not yet reported, before and after: those of this write.
                try await store.withWriteTransaction(author: "trigger:test", depth: 1) { transaction in
                    func counts() async throws -> [String: Int64] {
                        let rows = try await transaction.connection.query("""
                            SELECT pg_stat_get_xact_tuples_updated('psync_objects'::regclass), pg_stat_get_xact_tuples_inserted('psync_counters'::regclass),
                                   pg_stat_get_xact_tuples_updated('psync_counters'::regclass), pg_stat_get_xact_tuples_hot_updated('psync_counters'::regclass)
                            """, logger: db.logger)
                        for try await (objects, inserted, updated, hot) in rows.decode((Int64, Int64, Int64, Int64).self) {
                            return ["objects": objects, "inserted": inserted, "updated": updated, "hot": hot]
                        }
                        return [:]
                    }
                    let before = try await counts()
                    _ = try await transaction.apply(all)
                    return try await counts().merging(before) { $0 - $1 }
                }
            }
            let first = try await raiseCounting()
            #expect(first == ["objects": 50, "inserted": 50, "updated": 0, "hot": 0])
            // The half of each page kept free takes the next version of every row. (Later
            // ones need the page pruned of the versions before: PostgreSQL does it as it reads
            // the page, once no transaction may still see them.)
            let second = try await raiseCounting()
            #expect(second == ["objects": 0, "inserted": 0, "updated": 50, "hot": 50])
            #expect(Self.unreadCount(try await store.body(of: Self.user(49)), "r1") == 2)
            #expect(try await Self.storedCount(db, 49, "r1") == 0)
        }
    }

    @Test("counters kept in the object's row by a build of 0018 are read as they were, and moved to a row of their own by the next raise")
    func keptInTheObjectsRow() async throws {
        try await Self.withUsers(1) { db, store in
            try await Self.trigger(store, [Self.userPartition(0): [Self.raise(0, "r1", by: 7)]])
            // As a build of 0018 would have left them: in the object's row, at its version.
            _ = try await db.scalar("""
                WITH moved AS (
                    UPDATE psync_objects o SET counters = k.counters, counted = false, version = k.version
                    FROM psync_counters k WHERE o.id = k.id RETURNING 1
                ), gone AS (DELETE FROM psync_counters RETURNING 1)
                SELECT count(*)::bigint FROM moved
                """)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_counters") == 0)
            #expect(Self.unreadCount(try await store.body(of: Self.user(0)), "r1") == 7)
            #expect(Self.unreadCount(try await Self.drain(store, Self.userPartition(0), after: nil).objects.first?.body, "r1") == 7)
            try await Self.trigger(store, [Self.userPartition(0): [Self.raise(0, "r1"), Self.raise(0, "r2", by: 2)]])
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_objects WHERE counters IS NOT NULL") == 0)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_objects WHERE counted") == 1)
            #expect(try await Self.kept(db, 0) == 2)
            let body = try await store.body(of: Self.user(0))
            #expect(Self.unreadCount(body, "r1") == 8)
            #expect(Self.unreadCount(body, "r2") == 2)
        }
    }
}
