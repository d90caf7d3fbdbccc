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
}
