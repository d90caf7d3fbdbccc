import Foundation
import Logging
import PostgresNIO
import SyncStorage

/// Whether a one-shot command (`psync migrate`, `apikey`, `triggers`, `import`) can reach its
/// database: a connection opened and closed before the pool is made. The pool would retry a
/// refused connection for ever while the command waited in silence; this gives up after its
/// patience with the reason of the last try, and at once when the server answers with an
/// error (a wrong password, a database that does not exist), which no retry mends.
struct DatabaseReachability<C: Clock> where C.Duration == Duration {
    var url: DatabaseURL
    /// How long connections are tried; zero for one try.
    var patience: Duration
    var clock: C
    /// The pause between two tries.
    var pause: Duration = .milliseconds(500)

    /// The reason a database could not be reached.
    struct Unreachable: Error, CustomStringConvertible {
        var description: String
    }

    /// Returns once a connection to the database opened; throws ``Unreachable`` otherwise.
    func wait(logger: Logger) async throws {
        let configuration = try url.connectionConfiguration()
        let deadline = clock.now.advanced(by: patience)
        while true {
            do {
                let connection = try await PostgresConnection.connect(configuration: configuration, id: 0, logger: logger)
                try? await connection.close()
                return
            } catch let error as PSQLError where error.code == .server {
                let message = error.serverInfo?[.message] ?? "\(error.code)"
                throw Unreachable(description: "the database at \(url.host):\(url.port) refused the connection: \(message)")
            } catch {
                guard clock.now < deadline else {
                    throw Unreachable(description: "cannot connect to the database at \(url.host):\(url.port) (tried for \(patience.components.seconds) s, --db-connect-timeout): \(Self.reason(error))")
                }
                logger.info("the database is not reachable yet", metadata: ["error": "\(Self.reason(error))"])
                try await clock.sleep(until: min(clock.now.advanced(by: pause), deadline), tolerance: nil)
            }
        }
    }

    /// What went wrong, in a line: the socket's error for a failed connection.
    static func reason(_ error: any Error) -> String {
        guard let error = error as? PSQLError else { return "\(error)" }
        return error.underlying.map { "\($0)" } ?? "\(error.code)"
    }
}

extension DatabaseReachability where C == ContinuousClock {
    init(url: DatabaseURL, patience: Duration) {
        self.init(url: url, patience: patience, clock: ContinuousClock())
    }
}
