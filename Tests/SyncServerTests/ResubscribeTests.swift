import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

@Suite("Subscribing again", .timeLimit(.minutes(30)))
struct ResubscribeTests {
    /// Found by TouchWiki's watch tests, about one run in four: the SDK subscribes to a
    /// partition when it opens it and again once the session is ready. When the second
    /// `subscribe` arrived while the first one's page was queued, the new subscription took
    /// over the old one's count of pending pages, which then never went down: it never read
    /// again, and the client saw no change of that partition for as long as it stayed connected.
    /// The window is from the page's queueing to the writer's taking it, which the client
    /// cannot observe, so the test sends the second `subscribe` after a random pause of up to
    /// 3 ms, many times (seed printed); `SessionOutboxTests` has the rule deterministically.
    @Test("a partition subscribed to several times in a row catches up and follows live, every time")
    func subscribeAgainAndAgain() async throws {
        let permissions = {
            var permissions = TestServer.defaultPermissions
            permissions.register(
                ClosureRule(read: { principal, _, _ in principal.userID != nil }, write: { principal, _, _ in principal.userID != nil }),
                for: PartitionKind("room"))
            return permissions
        }()
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: permissions) { server in
                let alice = try await server.register("alice@example.com")
                let room = partition("room=r1")
                let store = db.store()
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                let seed = UInt64.random(in: 1...UInt64.max)
                print("ResubscribeTests seed \(seed)")
                var random = SeededGenerator(seed: seed)
                for round in 0..<60 {
                    client.send(.subscribe(partition: room, cursor: nil))
                    try await Task.sleep(for: .microseconds(Int.random(in: 0...3_000, using: &random)))
                    client.send(.subscribe(partition: room, cursor: nil))
                    let note = "n\(round)"
                    try await store.upload(Upload(partition: room, operations: [.put(key("Note", note), body: ["round": .int(Int64(round))])], principal: alice.userID))
                    let delivered = try await client.next(timeout: .seconds(10)) { message in
                        guard case .changes(let batch) = message, batch.partition == room else { return false }
                        return batch.objects.contains { $0.key.id == note }
                    }
                    guard case .changes = delivered else {
                        Issue.record("round \(round): \(delivered)")
                        return
                    }
                }
                await client.close()
            }
        }
    }
}
