import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

@Suite("Slow consumers", .timeLimit(.minutes(30)))
struct SlowConsumerTests {
    /// Commits about 24 MB of changes to a partition (ten objects of 20 kB, 120 times over):
    /// far beyond the socket buffers and a queue limit of a few hundred kB.
    static func fill(_ partition: Partition, in store: ObjectStore, as principal: String) async throws {
        let filler = JSONValue.string(String(repeating: "x", count: 20_000))
        for round in 0..<120 {
            let operations = (0..<10).map { n in
                SyncOperation.put(key("Blob", "b\(n)"), body: ["round": .int(Int64(round)), "data": filler])
            }
            try await store.upload(Upload(partition: partition, operations: operations, principal: principal))
        }
    }

    @Test("a client that stops reading does not grow the server's queue beyond its bound, and ends equal to the database")
    func boundedQueue() async throws {
        let limit = 256 << 10
        try await TestDatabase.with(exclusive: true) { db in
            try await TestServer.with(database: db.url, configure: {
                $0.sessions.outboxLimitBytes = limit
                $0.sessions.batchSize = 50
            }) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                let slow = try await server.connect(token: alice.accessToken)
                _ = try await slow.next()
                slow.send(.subscribe(partition: mine, cursor: nil))
                var copy = PartitionCopy()
                try await slow.sync(mine, into: &copy)
                slow.pauseReading()

                // About 24 MB of changes, far beyond the socket buffers and the queue limit.
                let store = db.store()
                try await Self.fill(mine, in: store, as: alice.userID)
                // The queue fills and the subscription pauses (the event), and the bound holds.
                let metrics = server.server.metrics
                let paused = try await TestTriggers.eventually(timeout: .seconds(30)) { metrics.subscriptionPauseCount > 0 }
                #expect(paused, "the queue never filled: the test sent too little")
                let peak = metrics.sessionQueuePeakBytes
                // One page may always be queued on top of a queue under the limit.
                let largestPage = 50 * 20_200
                #expect(peak <= limit + largestPage, "queued \(peak) bytes")
                #expect(peak > 0)

                slow.resumeReading()
                let database = try await store.snapshot(of: mine).compactMapValues(\.body)
                let deadline = ContinuousClock.now + .seconds(60)
                while copy.bodies != database, ContinuousClock.now < deadline {
                    guard case .changes(let batch) = try await slow.next(timeout: .seconds(20)) else { continue }
                    copy.apply(batch)
                }
                #expect(copy.bodies == database)
                #expect(copy.bodies[key("Blob", "b3")]?["round"] == 119)
                await slow.close()
            }
        }
    }

    @Test("a client that stops reading still loses a revoked subscription at once, with none of its later pages sent, and its uploads are still applied (the blocked socket held up the worker)")
    func revokedWhileNotReading() async throws {
        try await TestDatabase.with(exclusive: true) { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions, configure: {
                $0.sessions.outboxLimitBytes = 256 << 10
                $0.sessions.batchSize = 50
            }) { server in
                let alice = try await server.register("alice@example.com")
                let (secret, busy) = (partition("room=secret"), partition("room=busy"))
                let store = db.store()
                let profile = key("Profile", alice.userID)
                try await store.upload(Upload(
                    partition: partition("user=\(alice.userID)"),
                    operations: [.put(profile, body: ["rooms": ["secret", "busy"]])], principal: alice.userID))
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                var (secretCopy, busyCopy) = (PartitionCopy(), PartitionCopy())
                client.send(.subscribe(partition: secret, cursor: nil))
                try await client.sync(secret, into: &secretCopy)
                client.send(.subscribe(partition: busy, cursor: nil))
                try await client.sync(busy, into: &busyCopy)
                client.pauseReading()

                // About 24 MB into the busy room: the socket fills and the writer waits on it.
                try await Self.fill(busy, in: store, as: alice.userID)
                let metrics = server.server.metrics
                #expect(try await TestTriggers.eventually(timeout: .seconds(30)) { metrics.subscriptionPauseCount > 0 })

                // Alice leaves the secret room: the server ends her subscription while she reads nothing…
                try await store.upload(Upload(
                    partition: partition("user=\(alice.userID)"), operations: [.put(profile, body: ["rooms": ["busy"]])],
                    principal: alice.userID))
                #expect(try await TestTriggers.eventually(timeout: .seconds(20)) { metrics.snapshot.subscriptions == 1 })
                // …so what the room says after it is never queued for her…
                try await store.upload(Upload(partition: secret, operations: [.put(key("Note", "plan"), body: ["text": "after"])], principal: "bob"))
                // …and an upload of hers is applied, though she still reads nothing.
                client.send(.upload(requestId: "u1", partition: busy, operations: [.put(key("Note", "mine"), body: ["text": "hi"])]))
                #expect(try await TestTriggers.eventually(timeout: .seconds(20)) { try await store.body(of: key("Note", "mine")) != nil })

                client.resumeReading()
                var revoked = false
                var acked = false
                while !(revoked && acked) {
                    switch try await client.next(timeout: .seconds(30)) {
                    case .changes(let batch) where batch.partition == secret:
                        #expect(!batch.objects.contains { $0.key == key("Note", "plan") }, "a page after the revocation was sent")
                    case .unsubscribed(secret, let code):
                        #expect(code == .permissionRevoked)
                        revoked = true
                    case .ack(requestId: "u1", _, _, _):
                        acked = true
                    default:
                        continue
                    }
                }
                await client.close()
            }
        }
    }
}
