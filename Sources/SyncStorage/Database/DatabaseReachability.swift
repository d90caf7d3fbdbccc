import Logging
import PostgresNIO
import SyncProtocol

/// Waits until the database takes a connection: one opened and closed before the pool is used,
/// as ``DatabaseWait`` decides (how long, what to log, when to give up).
///
/// `psync serve` waits as long as it takes, saying so once and then every 30 s, where the
/// pool's own retries were a line per try and nothing of psync's; the one-shot commands
/// (`migrate`, `apikey`, `triggers`, `import`) give up after `--db-connect-timeout` with the
/// reason, and at once on a refusal (a wrong password).
package struct DatabaseReachability: Sendable {
    package var url: DatabaseURL
    package var patience: DatabaseWait.Patience
    package var time: SyncClock

    /// The reason a database could not be reached.
    package struct Unreachable: Error, CustomStringConvertible {
        package var description: String
    }

    package init(url: DatabaseURL, patience: DatabaseWait.Patience, time: SyncClock = .system) {
        self.url = url
        self.patience = patience
        self.time = time
    }

    /// Returns once a connection to the database opened; throws ``Unreachable`` when the wait
    /// gives up, `CancellationError` when cancelled.
    package func wait(logger: Logger) async throws {
        let configuration = try url.connectionConfiguration()
        var wait = DatabaseWait(target: "\(url.host):\(url.port)", patience: patience)
        let start = time.uptime()
        while true {
            try Task.checkCancellation()
            let failure: DatabaseWait.Failure
            do {
                let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
                try? await connection.close()
                if let line = wait.connected(after: time.uptime() - start) { logger.notice("\(line)") }
                return
            } catch let error as PSQLError where error.code == .server {
                failure = Self.classify(sqlState: error.serverInfo?[.sqlState], message: error.serverInfo?[.message] ?? "\(error.code)")
            } catch {
                failure = .passing(Self.reason(error))
            }
            switch wait.failed(failure, after: time.uptime() - start) {
            case .giveUp(let reason):
                throw Unreachable(description: reason)
            case .retry(let pause, let line):
                if let line { logger.log(level: line.level, "\(line.message)") }
                try await time.sleep(for: pause)
            }
        }
    }

    /// A refusal by the database: one that passes (class 57, the server starting, stopping or
    /// in recovery; class 53, out of connection slots or memory) or one that stays.
    package static func classify(sqlState: String?, message: String) -> DatabaseWait.Failure {
        guard let sqlState, sqlState.hasPrefix("57") || sqlState.hasPrefix("53") else { return .refused(message) }
        return .passing(message)
    }

    /// What went wrong, in a line: the socket's error for a failed connection.
    package static func reason(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        return error.underlying.map { "\($0)" } ?? "\(error.code)"
    }
}
