import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Many subscribers stop reading in the middle of the snapshot of a large partition, more of
/// them than the server has database connections: uploads are still acked meanwhile, and each
/// snapshot completes once its client reads again.
@Suite("Slow catch-ups and the connection pool", .timeLimit(.minutes(30)))
struct SlowCatchUpTests {
    @Test("uploads are acked while more stalled snapshots than pool connections wait for their clients")
    func uploadsProceed() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { configuration in
                configuration.databasePoolSize = 4
                configuration.sessions.batchSize = 50
            }) { server in
                let alice = try await server.register("alice@example.com")
                let big = partition("user=\(alice.userID)")
                let store = db.store()
                let filler = String(repeating: "x", count: 2_000)
                for chunk in 0..<6 {
                    let operations: [SyncOperation] = (0..<500).map { index in
                        .put(key("Doc", "d\(chunk)-\(index)"), body: ["text": .string(filler)])
                    }
                    try await store.upload(Upload(partition: big, operations: operations, principal: alice.userID))
                }
                let bob = try await server.register("bob@example.com")
                let small = partition("user=\(bob.userID)")
                let writer = try await server.connect(token: bob.accessToken)
                _ = try await writer.next()

                var readers: [(TestSyncClient, PartitionCopy)] = []
                for _ in 0..<12 {
                    let reader = try await server.connect(token: alice.accessToken)
                    _ = try await reader.next()
                    reader.send(.subscribe(partition: big, cursor: nil))
                    // One page in, then the client stops reading: the server's writes back up.
                    guard case .changes(let first) = try await reader.next(timeout: .seconds(30)), !first.upToDate else {
                        Issue.record("the snapshot did not start with a partial page")
                        return
                    }
                    reader.pauseReading()
                    var copy = PartitionCopy()
                    copy.apply(first)
                    readers.append((reader, copy))
                }
                // While every snapshot is stalled (no reader reads), uploads are answered.
                for round in 0..<10 {
                    let answer: ServerMessage
                    do {
                        answer = try await writer.upload(
                            [.put(key("Note", "n\(round)"), body: ["round": .int(Int64(round))])], to: small, requestId: "r\(round)",
                            timeout: .seconds(30))
                    } catch is TestTimeout {
                        Issue.record("upload \(round) got no answer while the snapshots were stalled")
                        throw TestTimeout(what: "an upload while the snapshots were stalled")
                    }
                    #expect(answer.isAck, "\(answer)")
                }
                let stored = try await store.snapshot(of: big)
                for (reader, start) in readers {
                    reader.resumeReading()
                    var copy = start
                    try await reader.sync(big, into: &copy, timeout: .seconds(60))
                    #expect(copy.objects == stored)
                }
                for (reader, _) in readers { await reader.close() }
                await writer.close()
            }
        }
    }
}
