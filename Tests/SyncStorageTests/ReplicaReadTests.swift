import Logging
import PostgresNIO
@testable import SyncStorage
import SyncTesting
import Testing

/// What bounds a page read on a replica that stopped or froze (docs/SCALING.md, "Never older
/// than the client"): a connection leased on a task of its own, given up when it does not
/// come (`HeldConnection`), and a watch that closes the connection of a read that makes no
/// progress (`ReplicaReadWatch`). scripts/ha/check-replicas.sh freezes and stops a real replica.
@Suite("Replica reads")
struct ReplicaReadTests {
    /// Runs `body` with a client of the test database whose pool holds one connection.
    static func withPoolOfOne(_ body: @escaping @Sendable (PostgresClient, Logger) async throws -> Void) async throws {
        try await TestDatabase.with { db in
            var configuration = db.url.clientConfiguration
            configuration.options.maximumConnections = 1
            let client = PostgresClient(configuration: configuration, backgroundLogger: db.logger)
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                defer { group.cancelAll() }
                try await body(client, db.logger)
            }
        }
    }

    /// Runs `body` with a connection held from a pool of one and a watch over it of `patience`.
    static func withWatchedConnection(
        patience: Duration, _ body: @escaping @Sendable (PostgresConnection, ReplicaReadWatch, Logger) async throws -> Void
    ) async throws {
        try await withPoolOfOne { client, logger in
            let held = HeldConnection(client)
            defer { held.release() }
            let connection = try await withDeadline(.seconds(30), "a connection") { try await held.take() }
            let watch = ReplicaReadWatch(connection, patience: patience, ticker: DeadlineTicker(resolution: .milliseconds(50)))
            defer { watch.stop() }
            try await body(connection, watch, logger)
        }
    }

    @Test("a held connection goes back to the pool on release: a pool of one lends it again and again")
    func releaseGivesBack() async throws {
        try await Self.withPoolOfOne { client, logger in
            for _ in 0..<3 {
                let held = HeldConnection(client)
                // A lease never given back would make the next take wait for ever.
                let connection = try await withDeadline(.seconds(30), "the pool's only connection") { try await held.take() }
                for try await _ in try await connection.query("SELECT 1", logger: logger) {}
                held.release()
            }
        }
    }

    @Test("a lease given up before it came leaves the pool's connection to the next one")
    func givenUpLease() async throws {
        try await Self.withPoolOfOne { client, logger in
            let first = HeldConnection(client)
            _ = try await withDeadline(.seconds(30), "the pool's only connection") { try await first.take() }
            // The pool's only connection is held: the second lease waits, and is given up.
            let second = HeldConnection(client)
            await #expect(throws: DeadlineError.self) {
                _ = try await withDeadline(.milliseconds(300), "a second connection") { try await second.take() }
            }
            second.release()
            first.release()
            // Had the given-up request taken the connection when the first let go of it, and
            // kept it, this would wait for ever.
            let third = HeldConnection(client)
            let connection = try await withDeadline(.seconds(30), "the connection again") { try await third.take() }
            for try await _ in try await connection.query("SELECT 1", logger: logger) {}
            third.release()
            // Released first, a take answers at once.
            let fourth = HeldConnection(client)
            fourth.release()
            await #expect(throws: CancellationError.self) { _ = try await fourth.take() }
        }
    }

    @Test("a read that makes no progress has its connection closed, and fails")
    func stalledRead() async throws {
        try await Self.withWatchedConnection(patience: .milliseconds(300)) { connection, _, logger in
            // A minute without a row, as on a frozen replica: the watch closes the connection.
            await #expect(throws: (any Error).self) {
                for try await _ in try await connection.query("SELECT pg_sleep(60)", logger: logger) {}
            }
            #expect(connection.isClosed)
        }
    }

    @Test("a read that makes progress is left alone, however long it takes")
    func progressingRead() async throws {
        try await Self.withWatchedConnection(patience: .seconds(1)) { connection, watch, logger in
            // Rows handed over every 100 ms while the statement runs three times the patience.
            let marking = Task {
                while !Task.isCancelled {
                    watch.took()
                    try? await Task.sleep(for: .milliseconds(100))
                }
            }
            for try await _ in try await connection.query("SELECT pg_sleep(3)", logger: logger) {}
            marking.cancel()
            watch.stop()
            #expect(!connection.isClosed)
            #expect(watch.handed)
        }
    }
}
