import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// A connection the server ends under a running statement must not take the next statements
/// of its pool with it. postgres-nio 1.33.2 drops a query written to a connection between its
/// close and the pool hearing of it, and never answers it (see `withOpenConnection`); with a
/// pool of one connection, the statement after a failed commit always goes where the ended
/// connection was.
@Suite("Connections ended by the server")
struct ConnectionLossTests {
    static let rounds = 100

    @Test("a write that reaches a standby (25006, as after a failover) counts as the database unavailable, and its connection is closed: the next write gets a new one")
    func standbyConnectionReplaced() async throws {
        try await TestDatabase.with { db in
            try await TestPostgres.withClient(db.url, logger: db.logger, maximumConnections: 1) { client in
                let store = ObjectStore(client: client, logger: db.logger)
                let room = partition("room=a")
                func backend() async throws -> Int32 {
                    var pid: Int32 = 0
                    for try await value in try await client.query("SELECT pg_backend_pid()", logger: db.logger).decode(Int32.self) { pid = value }
                    return pid
                }
                // The pool's one connection now behaves as one to a standby does for writes.
                try await client.query("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY", logger: db.logger)
                let standby = try await backend()
                do {
                    try await store.upload(Upload(partition: room, operations: [.put(key("Doc", "d"), body: [:])], principal: "p", requestId: "r1"))
                    Issue.record("a write on a read-only connection succeeded")
                } catch {
                    #expect(isDatabaseUnavailable(error), "\(error)")
                }
                // Sent again, the upload reaches a new connection, which takes writes.
                let again = try await store.upload(Upload(partition: room, operations: [.put(key("Doc", "d"), body: [:])], principal: "p", requestId: "r1"))
                #expect(!again.isReplay && again.changes.count == 1)
                #expect(try await backend() != standby)
            }
        }
    }

    @Test("round after round, a commit whose backend is ended fails, and the next statement on the pool is answered")
    func nextStatementAnswered() async throws {
        try await TestDatabase.with { db in
            // Commits of objects named stalled-… wait in pg_sleep, where the test ends their backend.
            for sql in [
                "CREATE FUNCTION stall_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(5); RETURN NULL; END $$",
                """
                CREATE CONSTRAINT TRIGGER stall_commit AFTER INSERT ON psync_objects DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW WHEN (NEW.id LIKE 'stalled-%') EXECUTE FUNCTION stall_commit()
                """,
            ] {
                try await db.client.query(PostgresQuery(unsafeSQL: sql), logger: db.logger)
            }
            let terminate = """
                SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event = 'PgSleep'
                """
            try await TestPostgres.withClient(db.url, logger: db.logger, maximumConnections: 1) { client in
                let store = ObjectStore(client: client, logger: db.logger)
                let room = partition("room=a")
                for round in 0..<Self.rounds {
                    let stalled = key("Doc", "stalled-\(round)")
                    let applying = Task {
                        try await withDeadline(.seconds(10), "the upload of round \(round)") {
                            try await store.upload(Upload(partition: room, operations: [.put(stalled, body: [:])], principal: "p", requestId: "r\(round)"))
                        }
                    }
                    let deadline = ContinuousClock.now + .seconds(30)
                    while try await db.scalar(terminate) == 0 {
                        try #require(ContinuousClock.now < deadline, "round \(round): the commit never reached pg_sleep")
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    let upload = await applying.result
                    if case .failure(let error) = upload {
                        // Lost: the statement after its failed commit was never answered.
                        guard !(error is DeadlineError) else {
                            Issue.record("round \(round): \(error)")
                            return
                        }
                    } else {
                        Issue.record("round \(round): the commit was ended, yet the upload was applied")
                    }
                    // At once, on the same pool: answered (here, that the object is not stored).
                    let body = try await withDeadline(.seconds(10), "the statement after round \(round)") {
                        try await store.body(of: stalled)
                    }
                    #expect(body == nil, "round \(round)")
                }
            }
        }
    }
}
