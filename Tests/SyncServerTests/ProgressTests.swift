import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Snapshot progress (an addition to the contract): a subscription that asks for it learns from
/// its first page how many objects the whole catch-up holds.
@Suite("Snapshot progress", .timeLimit(.minutes(30)))
struct ProgressTests {
    /// The batches of a subscription, from the first to the up-to-date one.
    static func batches(_ client: TestSyncClient, _ partition: Partition, cursor: Cursor?, progress: Bool) async throws -> [ChangeBatch] {
        client.send(.subscribe(partition: partition, cursor: cursor, progress: progress))
        var batches: [ChangeBatch] = []
        while batches.last?.upToDate != true {
            guard case .changes(let batch) = try await client.next(timeout: .seconds(20)), batch.partition == partition else { continue }
            batches.append(batch)
        }
        return batches
    }

    @Test("the first page of a snapshot or catch-up says how many objects it holds (deleted ones left out of a snapshot), only when asked, and only when more pages follow")
    func totals() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { $0.sessions.batchSize = 25 }) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                let store = db.store()
                for start in stride(from: 0, to: 110, by: 10) {
                    try await store.upload(Upload(
                        partition: mine, operations: (start..<start + 10).map { .put(key("Note", "n\($0)"), body: ["n": .int(Int64($0))]) },
                        principal: alice.userID))
                }
                // Ten deleted: a snapshot leaves their tombstones out, and does not count them.
                try await store.upload(Upload(partition: mine, operations: (0..<10).map { .delete(key("Note", "n\($0)")) }, principal: alice.userID))
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()

                let snapshot = try await Self.batches(client, mine, cursor: nil, progress: true)
                #expect(snapshot.map(\.total) == [100, nil, nil, nil])
                #expect(snapshot.reduce(0) { $0 + $1.objects.count } == 100)

                // Not asked: no count. Asked again in the same session: counted once only.
                #expect(try await Self.batches(client, mine, cursor: nil, progress: false).allSatisfy { $0.total == nil })
                #expect(try await Self.batches(client, mine, cursor: nil, progress: true).allSatisfy { $0.total == nil })

                // A catch-up from a cursor counts what changed after it, deletions included.
                let cursor = try #require(snapshot.last?.cursor)
                try await store.upload(Upload(partition: mine, operations: (10..<40).map { .delete(key("Note", "n\($0)")) }, principal: alice.userID))
                try await store.upload(Upload(partition: mine, operations: (0..<10).map { .put(key("Note", "new\($0)"), body: [:]) }, principal: alice.userID))
                let again = try await server.connect(token: alice.accessToken)
                _ = try await again.next()
                let catchUp = try await Self.batches(again, mine, cursor: cursor, progress: true)
                #expect(catchUp.first?.total == 40)
                #expect(catchUp.dropFirst().allSatisfy { $0.total == nil })
                #expect(catchUp.reduce(0) { $0 + $1.objects.count } == 40)

                // What fits in one page needs no count.
                let cursorNow = try #require(catchUp.last?.cursor)
                try await store.upload(Upload(partition: mine, operations: [.put(key("Note", "one"), body: [:])], principal: alice.userID))
                let third = try await server.connect(token: alice.accessToken)
                _ = try await third.next()
                #expect(try await Self.batches(third, mine, cursor: cursorNow, progress: true).map(\.total) == [nil])
            }
        }
    }

    @Test("the wire form: 'progress' in subscribe, 'total' in changes")
    func wireForm() throws {
        let partition = try Partition("user=u1")
        let message = ClientMessage.subscribe(partition: partition, cursor: nil, progress: true)
        #expect(message.json["progress"] == true)
        #expect(try ClientMessage(json: message.json) == message)
        #expect(ClientMessage.subscribe(partition: partition, cursor: nil).json["progress"] == nil)
        #expect(throws: SyncError.self) {
            try ClientMessage(json: ["type": "subscribe", "partition": "user=u1", "cursor": nil, "progress": "yes"])
        }
        var batch = EncodedChangeBatch(partition: partition, objects: [], cursor: Cursor(rawValue: "c"), upToDate: false, reset: true)
        batch.total = 1_234
        let decoded = try ChangeBatch(json: try JSONParser().parse(batch.messageBytes()))
        #expect(decoded.total == 1_234)
    }
}
