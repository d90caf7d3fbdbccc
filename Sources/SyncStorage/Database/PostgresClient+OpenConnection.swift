import Logging
import PostgresNIO

/// Every query of the storage layer goes through these, never through `PostgresClient.query`,
/// `withConnection` or `withTransaction` directly.
///
/// postgres-nio 1.33.2 can lose a query for good. A connection whose server went away (a
/// restart, `pg_terminate_backend`) is marked inactive at once, but its handlers leave the
/// channel, and the pool hears of the close, only one event-loop turn later. A query written
/// in between reaches no handler: the write is dropped and the query's answer never comes.
/// The pool hands such a connection out again when it is released in that turn, which is
/// what a failed statement followed by `ROLLBACK` and the next lease does: seen as a test
/// that hung in CI, and as uploads stalled until their timeout after a database restart.
///
/// So here a connection that fails with an error ending it is closed (waiting for the close)
/// before it goes back to the pool, which then forgets it; a leased connection found closed
/// waits for the same and is swapped for another; and a transaction whose connection ended
/// sends no `ROLLBACK` on it. Results are read whole inside the lease.
extension PostgresClient {
    /// Runs `body` with a connection of the pool that is open when `body` starts.
    package func withOpenConnection<Result>(_ body: (PostgresConnection) async throws -> Result) async throws -> Result {
        while true {
            let outcome: Result? = try await withConnection { connection in
                guard !connection.isClosed else {
                    await connection.finishClosing()
                    return nil
                }
                do {
                    return try await body(connection)
                } catch {
                    if connection.isClosed || endsConnection(error) { await connection.finishClosing() }
                    throw error
                }
            }
            if let outcome { return outcome }
        }
    }

    /// Runs `body` in a transaction on an open connection: `BEGIN`, `body`, then `COMMIT`, or
    /// `ROLLBACK` if `body` throws (and its connection still works); the error is rethrown.
    package func withOpenTransaction<Result: Sendable>(
        logger: Logger, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withOpenConnection { connection in
            try await connection.query("BEGIN", logger: logger)
            do {
                let result = try await body(connection)
                try await connection.query("COMMIT", logger: logger)
                return result
            } catch {
                await connection.rollBack(after: error, logger: logger)
                throw error
            }
        }
    }

    /// Runs one statement on an open connection and reads all its rows.
    @discardableResult
    package func fetch(_ query: PostgresQuery, logger: Logger, file: String = #fileID, line: Int = #line) async throws -> QueryRows {
        try await withOpenConnection { connection in
            QueryRows(rows: try await connection.query(query, logger: logger, file: file, line: line).collect())
        }
    }
}

extension PostgresConnection {
    /// Rolls back the open transaction after `error`, unless the error ended the connection
    /// (a `ROLLBACK` written to it could be lost: see ``PostgresClient/withOpenConnection(_:)``).
    package func rollBack(after error: any Error, logger: Logger) async {
        guard !isClosed, !endsConnection(error) else { return }
        _ = try? await query("ROLLBACK", logger: logger)
    }

    /// Closes the connection if it is not closed yet, and returns once the close is complete
    /// (and the pool, which hears of it first, has forgotten the connection).
    func finishClosing() async {
        // `close()` returns at once for a connection already inactive: wait for the close itself.
        if !isClosed { try? await close() }
        try? await closeFuture.get()
    }
}

/// Whether `error` means the connection it came from can no longer be used: the connection
/// failed or closed, the server ended the session (an error of severity `FATAL` or `PANIC`,
/// such as 57P01 when the server shuts down or the backend is terminated), or it reached a
/// standby (25006): a failover moved the primary, and only a new connection through the
/// proxy reaches the new one, so this one is closed rather than handed out again.
package func endsConnection(_ error: any Error) -> Bool {
    guard let error = error as? PSQLError else { return false }
    switch error.code {
    case .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown:
        return true
    case .server:
        let severity = error.serverInfo?[.severity]
        return severity == "FATAL" || severity == "PANIC" || error.serverInfo?[.sqlState] == PSQLError.readOnly
    default:
        return false
    }
}
