import PartitionSync
import SyncProtocol
import SyncServer
import SyncTesting

/// Settings of the fault tests: the version poll, the safety net under notifications, is off
/// (an hour between polls), so deliveries between instances rest on LISTEN/NOTIFY alone.
enum FaultFixtures {
    static let pollOff: @Sendable (inout ServerConfiguration) -> Void = { configuration in
        configuration.changePollInterval = .seconds(3600)
    }

    /// Two instances, A and B, on one database with the version poll off, and alice's partition
    /// with a subscriber on each (already up to date) and a writer on each, in that order.
    struct TwoInstances {
        let db: TestDatabase
        let a: TestServer
        let b: TestServer
        let partition: Partition
        var subscribers: [TestSyncClient]
        var copies: [PartitionCopy]
        var writers: [TestSyncClient]

        /// Puts `id` into the partition through the writer on instance `writer` (0: A, 1: B),
        /// with the id as its request id.
        func write(_ id: String, body: [String: JSONValue] = [:], via writer: Int) async throws -> ServerMessage {
            try await writers[writer].upload([.put(key("Note", id), body: body)], to: partition, requestId: id)
        }
    }

    static func withTwoInstances(_ body: @escaping @Sendable (inout TwoInstances) async throws -> Void) async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: pollOff) { a in
                try await TestServer.with(database: db.url, configure: pollOff) { b in
                    let alice = try await a.register("alice@example.com")
                    let mine = partition("user=\(alice.userID)")
                    var subscribers: [TestSyncClient] = []
                    var copies: [PartitionCopy] = []
                    for server in [a, b] {
                        let client = try await server.connect(token: alice.accessToken)
                        _ = try await client.next()
                        client.send(.subscribe(partition: mine, cursor: nil))
                        var copy = PartitionCopy()
                        try await client.sync(mine, into: &copy)
                        subscribers.append(client)
                        copies.append(copy)
                    }
                    var writers: [TestSyncClient] = []
                    for server in [a, b] {
                        let client = try await server.connect(token: alice.accessToken)
                        _ = try await client.next()
                        writers.append(client)
                    }
                    var pair = TwoInstances(db: db, a: a, b: b, partition: mine, subscribers: subscribers, copies: copies, writers: writers)
                    try await body(&pair)
                    for client in pair.subscribers + pair.writers { await client.close() }
                }
            }
        }
    }
}
