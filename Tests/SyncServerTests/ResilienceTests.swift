import Logging
import PartitionSync
import PostgresNIO
import ServiceLifecycle
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

@Suite("Resilience", .timeLimit(.minutes(30)))
struct ResilienceTests {
    @Test("a lost LISTEN connection is re-established and subscriptions catch up on what was committed meanwhile")
    func listenerReconnect() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                client.send(.subscribe(partition: mine, cursor: nil))
                var copy = PartitionCopy()
                try await client.sync(mine, into: &copy)
                // Cut the listener's connection, and commit while it is away.
                let killed = try await db.client.query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND datname = current_database()")
                var count = 0
                for try await _ in killed { count += 1 }
                #expect(count == 1)
                let store = db.store()
                for n in 0..<5 {
                    try await store.upload(Upload(partition: mine, operations: [.put(key("Note", "n\(n)"), body: [:])], principal: alice.userID))
                }
                let expected = try await store.snapshot(of: mine).compactMapValues(\.body)
                let deadline = ContinuousClock.now + .seconds(10)
                while copy.bodies != expected, ContinuousClock.now < deadline {
                    guard case .changes(let batch) = try await client.next(timeout: .seconds(10)) else { continue }
                    copy.apply(batch)
                }
                #expect(copy.bodies == expected)
                // And live push works again afterwards.
                try await store.upload(Upload(partition: mine, operations: [.put(key("Note", "after"), body: [:])], principal: alice.userID))
                guard case .changes(let batch) = try await client.next(timeout: .seconds(5)) else { Issue.record("no push"); return }
                #expect(batch.objects.map(\.key) == [key("Note", "after")])
                await client.close()
            }
        }
    }

    @Test("a commit whose notification was never sent (its writer died after COMMIT) still reaches subscribers, by the poll")
    func unannouncedCommit() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                client.send(.subscribe(partition: mine, cursor: nil))
                var copy = PartitionCopy()
                try await client.sync(mine, into: &copy)
                // What a writer does before it announces: bump the version, write the object.
                // No notification is ever sent for it.
                try await db.client.withTransaction(logger: db.logger) { connection in
                    _ = try await connection.query(
                        """
                        WITH bumped AS (
                            INSERT INTO psync_partitions AS p (partition, version) VALUES (\(mine.description), 1)
                            ON CONFLICT (partition) DO UPDATE SET version = p.version + 1
                            RETURNING version)
                        INSERT INTO psync_objects (collection, id, partition, version, body)
                        SELECT 'Note', 'silent', \(mine.description), version, '{"text":"unannounced"}'::jsonb FROM bumped
                        """, logger: db.logger)
                }
                let started = ContinuousClock.now
                guard case .changes(let batch) = try await client.next(timeout: .seconds(5)) else {
                    Issue.record("the unannounced commit never arrived")
                    return
                }
                #expect(batch.objects.map(\.key) == [key("Note", "silent")])
                #expect(batch.objects.first?.body?["text"] == "unannounced")
                // The poll runs every second (the default).
                #expect(ContinuousClock.now - started < .seconds(3))
                await client.close()
            }
        }
    }

    /// A validator that holds an upload until released, to have one in flight at shutdown.
    struct Gate: WriteValidator {
        let entered: AsyncStream<Void>.Continuation
        let release: AsyncStream<Void>

        func validate(_ change: ObjectChange, in partition: Partition, by principal: Principal, context: ValidationContext) async throws {
            entered.yield()
            for await _ in release { break }
        }
    }

    @Test("graceful shutdown answers the upload in flight, then closes sessions with 1001; meanwhile /ready is 503 and new WebSockets are refused, so a balancer sends clients elsewhere")
    func gracefulShutdown() async throws {
        try await TestDatabase.with { db in
            var configuration = TestServer.defaultConfiguration
            configuration.port = 0
            let logger = TestPostgres.makeLogger("psync.test.server")
            let entered = AsyncStream.makeStream(of: Void.self)
            let release = AsyncStream.makeStream(of: Void.self)
            var permissions = TestServer.defaultPermissions
            permissions.add(Gate(entered: entered.continuation, release: release.stream))
            let server = SyncServer(configuration: configuration, database: db.url, application: SyncApplication(permissions: permissions), logger: logger)
            let group = ServiceGroup(services: [server], gracefulShutdownSignals: [], logger: logger)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await group.run() }
                let port = try await server.waitUntilListening()
                let test = TestServer(server: server, port: port)
                try await test.waitUntilReady()
                let alice = try await test.register("alice@example.com")
                let client = try await test.connect(token: alice.accessToken)
                _ = try await client.next()
                client.send(.upload(requestId: "last", partition: partition("user=\(alice.userID)"), operations: [.put(key("Note", "n"), body: [:])]))
                for await _ in entered.stream { break }
                await group.triggerGracefulShutdown()
                // The shutdown began: /ready says so (the upload still holds the session open).
                let deadline = ContinuousClock.now + .seconds(20)
                var ready = try await test.http.get("/ready")
                while ready.status == 200, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                    ready = try await test.http.get("/ready")
                }
                #expect(ready.status == 503)
                #expect(ready.json?["error"]?["message"] == "the server is stopping")
                // A new session is refused, not taken and held until the wind-down ends.
                await #expect(throws: (any Error).self) {
                    let late = try await test.connect(token: alice.accessToken)
                    _ = try await late.next(timeout: .seconds(2))
                }
                release.continuation.yield()
                // The upload sent before the shutdown is answered before the close.
                var answered = false
                while let message = try? await client.next(timeout: .seconds(5)) {
                    if case .ack(let id, _, _, _) = message, id == "last" { answered = true }
                }
                #expect(answered)
                #expect(try await client.closeCode() == 1001)
                try await tasks.waitForAll()
            }
            #expect(try await db.store().body(of: key("Note", "n")) != nil)
        }
    }
}
