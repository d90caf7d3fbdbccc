import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Live subscribers on two instances through an asynchronous failover that lost the last
/// commits (TestDatabase+Failover), with the version poll off: the new primary's commits take
/// the lost versions, and each subscriber still ends with exactly what the database holds —
/// after a reset, never keeping a lost object nor skipping a new one.
@Suite("Live delivery across a failover's lost tail", .timeLimit(.minutes(10)))
struct LostTailDeliveryTests {
    @Test("subscribers of both instances get a reset and converge to the new primary; the instance that writes and the one that is told")
    func subscribersConverge() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: FaultFixtures.pollOff) { a in
                try await TestServer.with(database: db.url, configure: FaultFixtures.pollOff) { b in
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
                    func write(_ id: String, via writer: Int) async throws {
                        let answer = try await writers[writer].upload([.put(key("Note", id), body: ["id": .string(id)])], to: mine, requestId: id)
                        #expect(answer.isAck, "\(answer)")
                    }
                    /// Every subscriber ends with exactly the stored objects; whether each saw a reset.
                    func converge(_ phase: String) async throws -> [Bool] {
                        let stored = try await db.store().snapshot(of: mine)
                        var resets: [Bool] = []
                        for index in subscribers.indices {
                            var reset = false
                            let deadline = ContinuousClock.now + .seconds(30)
                            while copies[index].objects != stored {
                                guard ContinuousClock.now < deadline,
                                    let message = try? await subscribers[index].next(timeout: deadline - ContinuousClock.now)
                                else {
                                    Issue.record(
                                        "\(phase): the subscriber on instance \(index == 0 ? "A" : "B") holds \(copies[index].objects.keys.map(\.id).sorted()), the database \(stored.keys.map(\.id).sorted())")
                                    throw TestTimeout(what: "convergence (\(phase))")
                                }
                                if case .changes(let batch) = message, batch.partition == mine {
                                    reset = reset || batch.reset
                                    copies[index].apply(batch)
                                }
                            }
                            resets.append(reset)
                        }
                        return resets
                    }

                    try await write("n1", via: 0)
                    try await write("n2", via: 1)
                    #expect(try await converge("before the failover") == [false, false])
                    try await db.standbyCaughtUp()
                    try await write("lost1", via: 0)
                    try await write("lost2", via: 0)
                    _ = try await converge("the tail, before it is lost")

                    // The listeners are not dropped yet (their reconnection would make every
                    // feed read): the writes through A come first. Versions 3 and 4 again,
                    // then 5, right after A's feed position (4, on the old timeline).
                    try await db.failOverLosingTail()
                    try await write("new1", via: 0)
                    try await write("new2", via: 0)
                    try await write("new3", via: 0)
                    let resets = try await converge("after the failover")
                    #expect(resets == [true, true], "a subscriber converged without a reset: \(resets)")
                    #expect(copies.allSatisfy { $0.objects[key("Note", "lost1")] == nil })
                    try await db.terminateListeners()
                    try await write("new4", via: 1)
                    try await write("new5", via: 0)
                    _ = try await converge("after the failover, live again")
                }
            }
        }
    }
}
