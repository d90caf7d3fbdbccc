import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Several server instances sharing one database.
@Suite("Several instances", .timeLimit(.minutes(30)))
struct ClusterTests {
    @Test("a change uploaded through instance B reaches a subscriber on instance A within a second")
    func crossInstance() async throws {
        try await TestDatabase.with(exclusive: true) { db in
            try await TestServer.with(database: db.url) { a in
                try await TestServer.with(database: db.url) { b in
                    #expect(a.port != b.port)
                    let alice = try await a.register("alice@example.com")
                    let mine = partition("user=\(alice.userID)")
                    let onA = try await a.connect(token: alice.accessToken)
                    _ = try await onA.next()
                    onA.send(.subscribe(partition: mine, cursor: nil))
                    var copy = PartitionCopy()
                    try await onA.sync(mine, into: &copy)
                    let onB = try await b.connect(token: alice.accessToken)
                    _ = try await onB.next()
                    let clock = ContinuousClock()
                    for round in 0..<5 {
                        // From the commit (B's ack) to the change arriving on A; the change may
                        // even arrive first.
                        onB.send(.upload(requestId: "r\(round)", partition: mine, operations: [.put(key("Note", "n\(round)"), body: ["round": .int(Int64(round))])]))
                        let ack = try await onB.next(timeout: .seconds(5))
                        #expect(ack.isAck)
                        let committed = clock.now
                        let arrived = try await onA.next(timeout: .seconds(5))
                        let elapsed = clock.now - committed
                        guard case .changes(let batch) = arrived else { Issue.record("\(arrived)"); return }
                        #expect(batch.objects.map(\.key) == [key("Note", "n\(round)")])
                        #expect(elapsed < .seconds(1), "took \(elapsed)")
                    }
                    await onA.close()
                    await onB.close()
                }
            }
        }
    }

    @Test("one feed read per partition on an instance, whatever the number of subscribers")
    func sharedFanOut() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                var clients: [TestSyncClient] = []
                for _ in 0..<8 {
                    let client = try await server.connect(token: alice.accessToken)
                    _ = try await client.next()
                    client.send(.subscribe(partition: mine, cursor: nil))
                    var copy = PartitionCopy()
                    try await client.sync(mine, into: &copy)
                    clients.append(client)
                }
                try await Task.sleep(for: .milliseconds(200))  // let the reads that follow the joins finish
                let readsBefore = server.server.metrics.feedReadCount
                try await db.store().upload(Upload(partition: mine, operations: [.put(key("Note", "x"), body: [:])], principal: alice.userID))
                for client in clients {
                    guard case .changes(let batch) = try await client.next() else { Issue.record("no change"); return }
                    #expect(batch.objects.map(\.key) == [key("Note", "x")])
                }
                // One read for the eight subscribers: or two, when the once-a-second poll of the
                // followed partitions' versions notices the commit while its notification is
                // being handled. Never one per subscriber.
                let reads = server.server.metrics.feedReadCount - readsBefore
                #expect(reads >= 1 && reads <= 2, "\(reads) feed reads")
                let counts = server.server.hubCounts
                #expect(counts.feeds == 1)
                #expect(counts.members == 8)
                for client in clients { await client.close() }
            }
        }
    }
}
