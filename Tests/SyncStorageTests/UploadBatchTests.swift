import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

@Suite("Batched uploads")
struct UploadBatchTests {
    @Test("uploads in one transaction: each all-or-nothing, refusals and repeats answered in order, one version")
    func mixedOutcomes() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("room=batch")
            let upload = { (id: String, operations: [SyncOperation]) in
                Upload(partition: room, operations: operations, principal: "alice", requestId: id)
            }
            let results = try await store.upload(batch: [
                upload("r1", [.put(key("Doc", "a"), body: ["n": 1])]),
                // Refused: the second operation needs an object that does not exist, so the
                // first operation of this upload must not stay either.
                upload("r2", [.put(key("Doc", "half"), body: [:]), .set(key("Doc", "missing"), path: path("x"), value: 1)]),
                upload("r3", [.put(key("Doc", "b"), body: ["n": 2]), .increment(key("Doc", "a"), path: path("n"), by: 10)]),
                // A repeat of r1 within the batch: answered with r1's outcome, applied nothing.
                upload("r1", [.put(key("Doc", "never"), body: [:])]),
                upload("", [.put(key("Doc", "never"), body: [:])]),
            ]) { changes, _ in
                if changes.contains(where: { $0.key.id == "refused-by-validator" }) {
                    throw SyncError(.validationFailed, "no")
                }
            }
            #expect(results.count == 5)
            let version = try results[0].get().version
            #expect(try results[2].get().version == version)
            #expect(try results[3].get().isReplay)
            #expect(try results[3].get().version == version)
            guard case .failure(let refused) = results[1] else { Issue.record("r2 was not refused"); return }
            #expect(refused.code == .notFound)
            guard case .failure(let badId) = results[4] else { Issue.record("an empty request id was accepted"); return }
            #expect(badId.code == .badRequest)

            #expect(try await store.body(of: key("Doc", "a"))?["n"] == 11)
            #expect(try await store.body(of: key("Doc", "b"))?["n"] == 2)
            #expect(try await store.body(of: key("Doc", "half")) == nil)
            #expect(try await store.body(of: key("Doc", "never")) == nil)
            // The refusal is remembered: a resend of r2 gets the same answer.
            let again = await errorCode { try await store.upload(upload("r2", [.put(key("Doc", "half"), body: [:])])) }
            #expect(again == .notFound)
            // Only the applied changes became events, all in one transaction.
            let rows = try await db.client.query(
                "SELECT count(*), count(DISTINCT xid::text) FROM psync_events WHERE partition = 'room=batch'", logger: db.logger)
            for try await (events, transactions) in rows.decode((Int64, Int64).self) {
                #expect(events == 3)  // a inserted, b inserted, a updated
                #expect(transactions == 1)
            }
        }
    }

    @Test("a validator's refusal rolls back only its own upload")
    func validatorRefusal() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("room=validated")
            let results = try await store.upload(batch: (0..<5).map { n in
                Upload(
                    partition: room, operations: [.put(key("Doc", n == 2 ? "refused" : "d\(n)"), body: ["n": .int(Int64(n))])],
                    principal: "alice", requestId: "v\(n)")
            }) { changes, _ in
                if changes.contains(where: { $0.key.id == "refused" }) { throw SyncError(.validationFailed, "not this one") }
            }
            #expect(results.map { (try? $0.get()) != nil } == [true, true, false, true, true])
            let snapshot = try await store.snapshot(of: room)
            #expect(Set(snapshot.keys.map(\.id)) == ["d0", "d1", "d3", "d4"])
        }
    }

    @Test("without repeats a batch is written at once: later uploads build on earlier ones, a refused one in between leaves no trace")
    func stagedBatch() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("room=staged")
            let upload = { (id: String, operations: [SyncOperation]) in
                Upload(partition: room, operations: operations, principal: "alice", requestId: id)
            }
            let results = try await store.upload(batch: [
                upload("s1", [.put(key("Doc", "a"), body: ["n": 1, "tags": []])]),
                upload("s2", [.increment(key("Doc", "a"), path: path("n"), by: 1)]),
                // Refused by the validator after the two above: a must stay at n = 2 here.
                upload("s3", [.increment(key("Doc", "a"), path: path("n"), by: 100), .put(key("Doc", "refused"), body: [:])]),
                upload("s4", [.increment(key("Doc", "a"), path: path("n"), by: 1), .put(key("Doc", "b"), body: ["n": 2])]),
                upload("s5", [.delete(key("Doc", "b"))]),
                upload("s6", [.set(key("Doc", "b"), path: path("n"), value: 3)]),  // b is deleted: dropped (delete wins)
            ]) { changes, transaction in
                if changes.contains(where: { $0.key.id == "refused" }) {
                    // What the validator reads includes the earlier uploads of the batch and this
                    // upload's own changes: 2, and 100 more.
                    let a = try await transaction.load([key("Doc", "a")])[key("Doc", "a")]?.state.body?["n"]
                    throw SyncError(.validationFailed, "no (a.n = \(a?.description ?? "nil"))")
                }
            }
            #expect(results.map { (try? $0.get()) != nil } == [true, true, false, true, true, true])
            guard case .failure(let refused) = results[2] else { return }
            #expect(refused.message == "no (a.n = 102)")
            #expect(try await store.body(of: key("Doc", "a"))?["n"] == 3)
            #expect(try await store.body(of: key("Doc", "b")) == nil)
            #expect(try await store.body(of: key("Doc", "refused")) == nil)
            // Every applied change is an event, in order, each with its own before and after.
            let rows = try await db.client.query(
                """
                SELECT object_id, operation, (before->>'n')::int, (after->>'n')::int, count(*) OVER (PARTITION BY xid::text)
                FROM psync_events WHERE partition = 'room=staged' ORDER BY id
                """, logger: db.logger)
            var events: [String] = []
            for try await (id, operation, before, after, inTransaction) in rows.decode((String, String, Int?, Int?, Int64).self) {
                events.append("\(id) \(operation) \(before.map(String.init) ?? "-")→\(after.map(String.init) ?? "-")")
                #expect(inTransaction == 5)
            }
            #expect(events == ["a insert -→1", "a update 1→2", "a update 2→3", "b insert -→2", "b delete 2→-"])
            // Every outcome is recorded: resends get the same answers, and apply nothing again.
            let again = try await store.upload(batch: [upload("s2", [.increment(key("Doc", "a"), path: path("n"), by: 1)]),
                                                       upload("s3", [.put(key("Doc", "refused"), body: [:])])])
            #expect(try again[0].get().isReplay)
            guard case .failure(let refusedAgain) = again[1] else { Issue.record("s3 was accepted on resend"); return }
            #expect(refusedAgain.code == .validationFailed)
            #expect(try await store.body(of: key("Doc", "a"))?["n"] == 3)
        }
    }

    @Test("a batch whose request id was answered by an earlier batch replays that answer and applies the rest")
    func repeatFromEarlierBatch() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("room=resent")
            let upload = { (id: String, n: Int64) in
                Upload(partition: room, operations: [.increment(key("Doc", "c"), path: path("n"), by: .int(n))], principal: "alice", requestId: id)
            }
            try await store.upload(Upload(partition: room, operations: [.put(key("Doc", "c"), body: ["n": 0])], principal: "alice"))
            _ = try await store.upload(batch: [upload("t1", 1), upload("t2", 2)])
            let results = try await store.upload(batch: [upload("t2", 2), upload("t3", 4), upload("t4", 8)])
            #expect(try results[0].get().isReplay)
            #expect(try !results[1].get().isReplay)
            #expect(try await store.body(of: key("Doc", "c"))?["n"] == 15)
        }
    }
}
