import _ConnectionPoolModule
import PostgresNIO

extension PSQLError {
    /// Whether the error means the database could not be reached or went away (the
    /// connection failed or closed, the pool shut down, or the server is stopping, starting
    /// or recovering: SQLSTATE class 08, and 57P01–57P03), or that the connection reached a
    /// standby, which takes no writes (25006 `read_only_sql_transaction`: the primary failed
    /// over, or a proxy sent the connection to a node promoted but still in recovery), rather
    /// than that it refused the statement. Such work may succeed when tried again; an answer
    /// already lost may also have committed, which is why uploads carry request ids and
    /// triggers a fenced position.
    package var isUnavailable: Bool {
        switch code {
        case .connectionError, .serverClosedConnection, .clientClosedConnection, .poolClosed, .uncleanShutdown:
            return true
        case .server:
            guard let state = serverInfo?[.sqlState] else { return false }
            return state.hasPrefix("08") || state == "57P01" || state == "57P02" || state == "57P03" || state == Self.readOnly
        default:
            return false
        }
    }

    /// SQLSTATE `read_only_sql_transaction`: a write on a standby (or in a read-only transaction).
    static let readOnly = "25006"
}

/// Whether an error, as thrown by the storage layer (possibly wrapped in a transaction
/// error), means the database is unavailable (``PSQLError/isUnavailable``).
package func isDatabaseUnavailable(_ error: any Error) -> Bool {
    if let error = error as? PSQLError { return error.isUnavailable }
    // The database did not answer in time (a connection lost mid-query may never answer).
    if error is DeadlineError { return true }
    // The pool gave up making connections for a while (its circuit breaker), or is shut down.
    if let error = error as? ConnectionPoolError { return error == .connectionCreationCircuitBreakerTripped || error == .poolShutdown }
    if let error = error as? PostgresTransactionError {
        return [error.closureError, error.beginError, error.commitError, error.rollbackError].contains { $0.map(isDatabaseUnavailable) ?? false }
    }
    return false
}
