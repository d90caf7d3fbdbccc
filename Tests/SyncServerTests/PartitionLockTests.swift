import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Another client's transaction holds a partition's lock (the row of `psync_partitions` every
/// upload to it locks) for 30 seconds: uploads to that partition wait, uploads to every other
/// partition go on.
@Suite("A partition locked for long", .timeLimit(.minutes(30)))
struct PartitionLockTests {
    @Test("uploads to other partitions are acked while a partition's lock is held by another transaction")
    func otherPartitionsProceed() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let locked = partition("user=\(alice.userID)")
                var writers: [(TestHTTPClient.Tokens, TestSyncClient)] = []
                for name in ["bob", "carol", "dave"] {
                    let tokens = try await server.register("\(name)@example.com")
                    let client = try await server.connect(token: tokens.accessToken)
                    _ = try await client.next()
                    writers.append((tokens, client))
                }
                var waiting: [TestSyncClient] = []
                for _ in 0..<3 {
                    let client = try await server.connect(token: alice.accessToken)
                    _ = try await client.next()
                    waiting.append(client)
                }
                let (others, stuck) = (writers, waiting)
                #expect(try await stuck[0].upload([.put(key("Counter", "c"), body: ["n": .int(0)])], to: locked, requestId: "create").isAck)
                let othersDone = try await db.holdingPartitionLock(locked) {
                    // More uploads to the locked partition, from several clients, than the
                    // server runs upload transactions at once.
                    // One after the other, so that each takes a transaction of its own.
                    for (index, client) in stuck.enumerated() {
                        client.send(.upload(requestId: "stuck-\(index)", partition: locked, operations: [.increment(key("Counter", "c"), path: try! Path(parsing: "n"), by: .int(1))]))
                        let waiters = min(index + 1, 2)
                        #expect(try await TestTriggers.eventually(timeout: .seconds(20)) { try await db.lockWaiters() >= waiters }, "the uploads never waited for the lock")
                    }
                    // The lock is held until these are answered, or for 30 seconds.
                    for round in 0..<3 {
                        for (tokens, client) in others {
                            let answer: ServerMessage
                            do {
                                answer = try await client.upload(
                                    [.put(key("Note", "\(tokens.userID)-\(round)"), body: ["round": .int(Int64(round))])],
                                    to: partition("user=\(tokens.userID)"), requestId: "other-\(round)", timeout: .seconds(30))
                            } catch is TestTimeout {
                                Issue.record("an upload to another partition got no answer in 30 s while the lock was held")
                                return false
                            }
                            guard case .ack = answer else {
                                Issue.record("an upload to another partition was answered \(answer) while the lock was held")
                                return false
                            }
                        }
                    }
                    return true
                }
                #expect(othersDone, "uploads to other partitions stalled behind the locked one")
                // Released: the waiting uploads are answered; sent again where they failed, each applies once.
                for (index, client) in stuck.enumerated() {
                    var answer = try await client.next(timeout: .seconds(30)) { Self.answers($0, "stuck-\(index)") }
                    while case .error(let error, _) = answer, error.code == .unavailable {
                        answer = try await client.upload([.increment(key("Counter", "c"), path: try! Path(parsing: "n"), by: .int(1))], to: locked, requestId: "stuck-\(index)", timeout: .seconds(30))
                    }
                    #expect(answer.isAck, "\(answer)")
                }
                #expect(try await db.store().body(of: key("Counter", "c"))?["n"] == 3)
                for client in stuck + others.map(\.1) { await client.close() }
            }
        }
    }

    @Test("an upload waits for a held lock as long as the lock patience: past it the answer is unavailable, within it the upload applies once the lock is free")
    func lockPatienceEdge() async throws {
        try await TestDatabase.with { db in
            for (patience, held) in [(Duration.milliseconds(300), true), (Duration.seconds(120), false)] {
                let counter = key("Counter", held ? "held" : "free")
                let increment = SyncOperation.increment(counter, path: try! Path(parsing: "n"), by: .int(1))
                try await TestServer.with(database: db.url, configure: { $0.storage.lockPatience = patience }) { server in
                    let alice = try await server.register("alice-\(patience.components.seconds)@example.com")
                    let mine = partition("user=\(alice.userID)")
                    let client = try await server.connect(token: alice.accessToken)
                    _ = try await client.next()
                    #expect(try await client.upload([.put(counter, body: ["n": .int(0)])], to: mine, requestId: "create").isAck)
                    try await db.holdingPartitionLock(mine) {
                        client.send(.upload(requestId: "wait", partition: mine, operations: [increment]))
                        if held {
                            // The lock is held until the answer comes: 300 ms of patience (at each attempt) ran out.
                            let answer = try await client.next(timeout: .seconds(30)) { Self.answers($0, "wait") }
                            guard case .error(let error, _) = answer else { Issue.record("\(answer)"); return }
                            #expect(error.code == .unavailable)
                        } else {
                            // The upload waits for the lock; it is released once the upload is seen waiting.
                            #expect(try await TestTriggers.eventually(timeout: .seconds(20)) { try await db.lockWaiters() >= 1 })
                        }
                    }
                    if !held {
                        let answer = try await client.next(timeout: .seconds(30)) { Self.answers($0, "wait") }
                        #expect(answer.isAck, "\(answer)")
                    }
                    // Unavailable left nothing behind; the same upload again applies once.
                    let again = try await client.upload([increment], to: mine, requestId: "wait", timeout: .seconds(30))
                    #expect(again.isAck, "\(again)")
                    #expect(try await db.store().body(of: counter)?["n"] == 1)
                    await client.close()
                }
            }
        }
    }

    static func answers(_ message: ServerMessage, _ requestId: String) -> Bool {
        switch message {
        case .ack(let id, _, _, _), .rejected(let id, _, _, _): return id == requestId
        case .error: return true
        default: return false
        }
    }
}
