import Locking
import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

@Suite("Import batches")
struct ImportObjectsTests {
    static func puts(_ room: Partition, _ bodies: [(String, JSONValue)]) -> [NewObject] {
        bodies.map { id, n in NewObject(key: key("Doc", id), partition: room, body: ["n": n]) }
    }

    @Test("a batch of new objects is inserted without reading its keys; one holding a stored key is written again reading every key, with the same outcomes")
    func newThenAgain() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            store.recordEvents(.none)
            let room = partition("room=import")
            let first = try await store.importObjects(Self.puts(room, [("a", 1), ("b", 2)]), author: "system:import", validate: nil, commit: true)
            #expect(first == [.imported, .imported])
            #expect(store.importBatchPaths == (new: 1, again: 0))

            // c is new, a is stored with this very body, b with another: the insert as new
            // fails on a, and nothing of that attempt stays (c is stored once, by the second).
            let second = try await store.importObjects(Self.puts(room, [("c", 3), ("a", 1), ("b", 20)]), author: "system:import", validate: nil, commit: true)
            #expect(second.count == 3)
            #expect(second[0] == .imported && second[1] == .unchanged)
            guard case .refused(let error) = second[2] else { Issue.record("b was not refused: \(second[2])"); return }
            #expect(error.code == ObjectStore.importConflict)
            #expect(store.importBatchPaths == (new: 1, again: 1))
            #expect(try await store.body(of: key("Doc", "b"))?["n"] == 2)
            #expect(try await store.body(of: key("Doc", "c"))?["n"] == 3)
            // Versions stay one per transaction and partition: the failed attempt's is not kept.
            let rows = try await db.client.query(
                "SELECT count(DISTINCT version)::bigint, max(version) FROM psync_objects WHERE partition = 'room=import'", logger: db.logger)
            for try await (versions, latest) in rows.decode((Int64, Int64).self) {
                #expect(versions == 2 && latest == 2)
            }

            // A validator sees each new object as absent; its refusal refuses that one alone.
            // (No #expect inside the validator: with `#expect(changes.allSatisfy { … })` there,
            // Swift 6.3's debug build ran that closure for the next one, `contains { $0.key.id
            // == "e" }`, which then said true for d: two closures of one function, one in a
            // macro's expansion, apparently given one symbol.)
            let sawOnlyAbsent = Locked(true)
            let partitionsSeen = Locked<[Partition]>([])
            let third = try await store.importObjects(Self.puts(room, [("d", 4), ("e", 5)]), author: "system:import", validate: { changes, partition, _ in
                partitionsSeen.withLock { $0.append(partition) }
                let absent = changes.allSatisfy { $0.before == .absent }
                let isE = changes.contains { $0.key.id == "e" }
                if !absent { sawOnlyAbsent.withLock { $0 = false } }
                if isE { throw SyncError(.validationFailed, "not e") }
            }, commit: true)
            #expect(sawOnlyAbsent.withLock { $0 })
            // Each upload's validator is given its partition (both attempts of the batch).
            #expect(!partitionsSeen.withLock { $0 }.isEmpty && partitionsSeen.withLock { $0 }.allSatisfy { $0 == room })
            #expect(third == [.imported, .refused(SyncError(.validationFailed, "not e"))])
            #expect(store.importBatchPaths == (new: 2, again: 1))
            #expect(try await store.body(of: key("Doc", "e")) == nil)
        }
    }

    @Test("a batch whose events are recorded, or a dry run, reads every key")
    func eventsAndDryRuns() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("room=import")
            store.recordEvents(.all)
            #expect(try await store.importObjects(Self.puts(room, [("a", 1)]), author: "system:import", validate: nil, commit: true) == [.imported])
            #expect(store.importBatchPaths == (new: 0, again: 1))
            for try await count in try await db.client.query("SELECT count(*)::bigint FROM psync_events", logger: db.logger).decode(Int64.self) {
                #expect(count == 1)
            }
            store.recordEvents(.none)
            #expect(try await store.importObjects(Self.puts(room, [("a", 1), ("b", 2)]), author: "system:import", validate: nil, commit: false) == [.unchanged, .imported])
            #expect(store.importBatchPaths == (new: 0, again: 2))
            #expect(try await store.body(of: key("Doc", "b")) == nil)
        }
    }

    @Test("the bulk path: an id twice in a batch, the batch's earlier objects in a validator's view, and the clock stamp")
    func bulkPath() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            store.recordEvents(.none)
            let (room, other) = (partition("room=import"), partition("room=other"))
            // room's clock raised by writes of its own: the batch's clock is room's, and other
            // (locked first by the batch) must be stamped with it.
            for n in 1...3 {
                try await store.withWriteTransaction(author: "system:test") { transaction in
                    try await transaction.apply([.put(key("Doc", "w\(n)"), body: [:])], in: room)
                }
            }
            let sawA = Locked<JSONValue?>(nil)
            let objects = Self.puts(room, [("a", 1), ("a", 1), ("b", 2), ("b", 3)])
                + [NewObject(key: key("Doc", "a"), partition: other, body: ["n": 1]), NewObject(key: key("Doc", "c"), partition: other, body: ["n": 4])]
            let outcomes = try await store.importObjects(objects, author: "system:import", validate: { changes, _, transaction in
                guard changes.first?.key.id == "c" else { return }
                let a = try await transaction.bodies(of: [key("Doc", "a")])[key("Doc", "a")]
                sawA.withLock { $0 = a?["n"] }
            }, commit: true)
            #expect(store.importBatchPaths == (new: 1, again: 0))
            #expect(outcomes.count == 6)
            #expect(outcomes[0] == .imported && outcomes[1] == .unchanged && outcomes[2] == .imported && outcomes[5] == .imported)
            guard case .refused(let conflict) = outcomes[3], case .refused(let mismatch) = outcomes[4] else {
                Issue.record("b with another body, or a in another partition, was not refused: \(outcomes)")
                return
            }
            #expect(conflict.code == ObjectStore.importConflict && mismatch.code == .partitionMismatch)
            // c's validator read a, created earlier in the same batch and not written yet.
            #expect(sawA.withLock { $0 } == 1)
            #expect(try await store.body(of: key("Doc", "b"))?["n"] == 2)
            #expect(try await store.body(of: key("Doc", "c"))?["n"] == 4)
            let rows = try await db.client.query(
                "SELECT count(DISTINCT clock)::bigint, count(*)::bigint FROM psync_partitions WHERE partition IN ('room=import', 'room=other')",
                logger: db.logger)
            for try await (clocks, partitions) in rows.decode((Int64, Int64).self) {
                #expect(partitions == 2 && clocks == 1)
            }
        }
    }
}
