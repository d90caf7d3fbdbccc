import Logging
import ServiceLifecycle

/// Says so when the embedded cluster a server uses stops under it (another program stopped it,
/// or its postmaster died), and when it runs again: the server itself answers `unavailable`
/// meanwhile, and the operator should learn why from the log.
package struct EmbeddedPostgresWatcher: Service {
    let postgres: EmbeddedPostgres
    let interval: Duration
    let logger: Logger

    package init(postgres: EmbeddedPostgres, interval: Duration = .seconds(2), logger: Logger) {
        self.postgres = postgres
        self.interval = interval
        self.logger = logger
    }

    package func run() async throws {
        var running = true
        while !Task.isShuttingDownGracefully, !Task.isCancelled {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
            guard !Task.isShuttingDownGracefully else { return }
            let now = postgres.isRunning
            if running, !now {
                logger.error(
                    "the embedded PostgreSQL stopped under the server: another program stopped it or it died; the server answers unavailable until it runs again",
                    metadata: ["dataDirectory": "\(postgres.configuration.dataDirectory)"])
            } else if !running, now {
                logger.notice("the embedded PostgreSQL runs again")
            }
            running = now
        }
    }
}
