import NIOCore
import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// The WebSocket protocol end to end: real server on loopback, real PostgreSQL, real client.
@Suite("WebSocket protocol", .timeLimit(.minutes(30)))
struct ProtocolTests {
    @Test("ready, subscribe, snapshot, upload with ack, live change, pong")
    func basics() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let client = try await server.connect(token: alice.accessToken)
                #expect(try await client.next() == .ready(userId: alice.userID))
                let mine = partition("user=\(alice.userID)")
                client.send(.subscribe(partition: mine, cursor: nil))
                guard case .changes(let snapshot) = try await client.next() else { Issue.record("no snapshot"); return }
                #expect(snapshot.reset && snapshot.upToDate && snapshot.objects.isEmpty)
                client.send(.upload(requestId: "r1", partition: mine, operations: [.put(key("Note", "n1"), body: ["text": "hi"])]))
                var sawAck = false
                var sawChange = false
                while !(sawAck && sawChange) {
                    switch try await client.next() {
                    case .ack(let requestId, let partition, _, _):
                        #expect(requestId == "r1" && partition == mine)
                        sawAck = true
                    case .changes(let batch):
                        #expect(batch.objects.map(\.key) == [key("Note", "n1")])
                        #expect(batch.objects.first?.body?["text"] == "hi")
                        #expect(batch.upToDate && !batch.reset)
                        sawChange = true
                    case let other:
                        Issue.record("unexpected \(other)")
                        return
                    }
                }
                client.send(.ping(nonce: ["any": [1, "json"]]))
                #expect(try await client.next() == .pong(nonce: ["any": [1, "json"]]))
                await client.close()
            }
        }
    }

    @Test("a snapshot larger than a batch arrives in several batches; reconnecting from the cursor sends exactly what was missed")
    func snapshotAndResume() async throws {
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
                let first = try await server.connect(token: alice.accessToken)
                _ = try await first.next()
                first.send(.subscribe(partition: mine, cursor: nil))
                var batches: [ChangeBatch] = []
                while batches.last?.upToDate != true {
                    guard case .changes(let batch) = try await first.next() else { continue }
                    batches.append(batch)
                }
                #expect(batches.count == 5)
                #expect(batches.map(\.reset) == [true, false, false, false, false])
                #expect(batches.dropLast().allSatisfy { $0.objects.count == 25 && !$0.upToDate })
                var copy = PartitionCopy()
                batches.forEach { copy.apply($0) }
                #expect(copy.objects.count == 110)
                await first.close()

                // While the client is away: an edit, a deletion, a new object.
                try await store.upload(Upload(partition: mine, operations: [.set(key("Note", "n5"), path: try Path(parsing: "n"), value: 500)], principal: alice.userID))
                try await store.upload(Upload(partition: mine, operations: [.delete(key("Note", "n6"))], principal: alice.userID))
                try await store.upload(Upload(partition: mine, operations: [.put(key("Note", "new"), body: [:])], principal: alice.userID))

                let second = try await server.connect(token: alice.accessToken)
                _ = try await second.next()
                second.send(.subscribe(partition: mine, cursor: copy.cursor))
                var missed: [SyncObject] = []
                while true {
                    guard case .changes(let batch) = try await second.next() else { continue }
                    #expect(!batch.reset)
                    missed += batch.objects
                    copy.apply(batch)
                    if batch.upToDate { break }
                }
                #expect(missed.map(\.key) == [key("Note", "n5"), key("Note", "n6"), key("Note", "new")])
                #expect(missed[1].isDeleted)
                #expect(copy.bodies == (try await store.snapshot(of: mine)).compactMapValues(\.body))
                await second.close()
            }
        }
    }

    @Test("a cursor from another database gets a full snapshot with reset")
    func foreignCursor() async throws {
        let foreign = try await TestDatabase.with { db in
            try await db.store().changes(in: partition("user=x"), after: nil).cursor
        }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                try await db.store().upload(Upload(partition: mine, operations: [.put(key("Note", "a"), body: [:])], principal: alice.userID))
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                for cursor in [foreign, Cursor(rawValue: "garbage")] {
                    client.send(.subscribe(partition: mine, cursor: cursor))
                    guard case .changes(let batch) = try await client.next() else { Issue.record("no batch"); return }
                    #expect(batch.reset)
                    #expect(batch.objects.map(\.key) == [key("Note", "a")])
                }
                await client.close()
            }
        }
    }

    @Test("a refused upload is rejected with the compensating states of every object it touched")
    func rejectedWithCompensation() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                let kept = key("Note", "kept")
                #expect(try await client.upload([.put(kept, body: ["v": 1])], to: mine, requestId: "r1").isAck)
                // Changes an existing object, creates a new one, then breaks a rule.
                let fresh = key("Note", "fresh")
                let answer = try await client.upload(
                    [.set(kept, path: try Path(parsing: "v"), value: 2), .put(fresh, body: [:]), .put(key("Note", "bad"), body: ["forbidden": true])],
                    to: mine, requestId: "r2")
                guard case .rejected(let requestId, let target, let error, let objects) = answer else {
                    Issue.record("expected a rejection, got \(answer)")
                    return
                }
                #expect(requestId == "r2" && target == mine)
                #expect(error.code == .validationFailed)
                let states = Dictionary(uniqueKeysWithValues: objects.map { ($0.key, $0) })
                #expect(states[kept]?.body?["v"] == 1)
                #expect(states[fresh]?.isDeleted == true)
                #expect(states[key("Note", "bad")]?.isDeleted == true)
                #expect(try await db.store().body(of: fresh) == nil)
                // An operation error is a rejection too.
                let broken = try await client.upload([.set(key("Note", "nobody"), path: try Path(parsing: "x"), value: 1)], to: mine, requestId: "r3")
                guard case .rejected(_, _, let notFound, _) = broken else { Issue.record("expected a rejection"); return }
                #expect(notFound.code == .notFound)
                await client.close()
            }
        }
    }

    @Test("re-sending an upload with the same request id applies nothing and answers as the first time")
    func idempotentReupload() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                let counter = key("Counter", "c")
                let operations: [SyncOperation] = [.put(counter, body: [:]), .increment(counter, path: try Path(parsing: "n"), by: 1)]
                let first = try await client.upload(operations, to: mine, requestId: "same")
                let second = try await client.upload(operations, to: mine, requestId: "same")
                #expect(first == second)
                #expect(try await db.store().body(of: counter)?["n"] == 1)
                await client.close()
            }
        }
    }

    @Test("auth as the first message; anything else first is refused and closes with 4001")
    func authMessage() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let client = try await server.connect(token: nil)
                client.send(.auth(token: alice.accessToken))
                #expect(try await client.next() == .ready(userId: alice.userID))
                client.send(.ping(nonce: 1))
                #expect(try await client.next() == .pong(nonce: 1))
                await client.close()

                let rude = try await server.connect(token: nil)
                rude.send(.ping(nonce: 1))
                guard case .error(let error, _) = try await rude.next() else { Issue.record("no error"); return }
                #expect(error.code == .unauthenticated)
                #expect(try await rude.closeCode() == 4001)

                let forged = try await server.connect(token: nil)
                forged.send(.auth(token: "not-a-token"))
                guard case .error(let bad, _) = try await forged.next() else { Issue.record("no error"); return }
                #expect(bad.code == .unauthenticated)
                #expect(try await forged.closeCode() == 4001)
            }
        }
    }

    @Test("after unsubscribe no more changes arrive; a denied subscribe is an error naming the partition")
    func unsubscribeAndDenied() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let bob = try await server.register("bob@example.com")
                let mine = partition("user=\(alice.userID)")
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                client.send(.subscribe(partition: partition("user=\(bob.userID)"), cursor: nil))
                #expect(try await client.next() == .error(SyncError(.permissionDenied, "you may not read user=\(bob.userID)"), partition: partition("user=\(bob.userID)")))
                client.send(.subscribe(partition: mine, cursor: nil))
                var copy = PartitionCopy()
                try await client.sync(mine, into: &copy)
                client.send(.unsubscribe(partition: mine))
                client.send(.ping(nonce: 1))
                #expect(try await client.next() == .pong(nonce: 1))
                try await db.store().upload(Upload(partition: mine, operations: [.put(key("Note", "later"), body: [:])], principal: alice.userID))
                #expect(try await client.receivesNothing(within: .milliseconds(500)))
                await client.close()
            }
        }
    }

    @Test("a page longer than the largest frame arrives whole, in several frames a client with a 1 MiB frame limit accepts")
    func framesOfLargePage() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                // Three bodies of 700 kB: a 2.1 MB page, over the server's 1 MiB frames and the
                // test client's 1 MiB frame limit.
                let text = String(repeating: "0123456789", count: 70_000)
                for n in 0..<3 {
                    try await db.store().upload(Upload(partition: mine, operations: [.put(key("Note", "big\(n)"), body: ["text": .string(text)])], principal: alice.userID))
                }
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                client.send(.subscribe(partition: mine, cursor: nil))
                guard case .changes(let batch) = try await client.next() else { Issue.record("no snapshot"); return }
                #expect(batch.upToDate && batch.objects.count == 3)
                #expect(batch.objects.allSatisfy { $0.body?["text"] == .string(text) })
                client.send(.ping(nonce: 1))
                #expect(try await client.next() == .pong(nonce: 1))
                await client.close()
            }
        }
    }

    @Test("an idle session is closed with 4000")
    func idleTimeout() async throws {
        try await TestDatabase.with(exclusive: true) { db in
            try await TestServer.with(database: db.url, configure: { $0.sessions.idleTimeout = .seconds(1) }) { server in
                let alice = try await server.register("alice@example.com")
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                #expect(try await client.closeCode(timeout: .seconds(5)) == 4000)
            }
        }
    }

    @Test("a session outliving its access token is closed with 4001 unless it sends a fresh one")
    func tokenExpiry() async throws {
        // Mock time: the old token lives 60 s, the fresh one is made 30 s later; the sessions
        // are checked at 61 s, when only the old one has expired.
        let clock = MockClock()
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: onMockTime(clock, tokenLifetime: .seconds(60))) { server in
                let alice = try await server.register("alice@example.com")
                let lapsed = try await server.connect(token: alice.accessToken)
                _ = try await lapsed.next()
                let renewed = try await server.connect(token: alice.accessToken)
                _ = try await renewed.next()
                clock.advance(by: .seconds(30))
                let fresh = try await server.http.login("alice@example.com", password: "correct horse battery")
                renewed.send(.auth(token: fresh.accessToken))
                renewed.send(.ping(nonce: 0))
                #expect(try await renewed.next() == .pong(nonce: 0))  // the fresh token is taken
                clock.advance(by: .seconds(31))
                server.server.sweepSessions()
                guard case .error(let error, _) = try await lapsed.next(timeout: .seconds(30)) else { Issue.record("no error"); return }
                #expect(error.code == .tokenExpired)
                #expect(try await lapsed.closeCode() == 4001)
                renewed.send(.ping(nonce: 1))
                #expect(try await renewed.next() == .pong(nonce: 1))
                await renewed.close()
            }
        }
    }
}

