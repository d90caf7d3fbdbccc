import CoreMetrics
import Logging
import ServiceLifecycle
import SyncStorage

/// Deletes objects whose `@expiresAt` has come (``ObjectStore/expireDue(limit:)``), looking
/// every ``ExpiryConfiguration/interval``: as a client's `delete` would, so subscribers and
/// triggers see it. Every instance runs one; they do not delete an object twice.
final class ExpiryService: Service, Sendable {
    let store: ObjectStore
    let configuration: ExpiryConfiguration
    let metrics: ServerMetrics
    let logger: Logger

    init(store: ObjectStore, configuration: ExpiryConfiguration, metrics: ServerMetrics, logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.metrics = metrics
        self.logger = logger
    }

    func run() async {
        var failing = false
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                while true {
                    let expired = try await store.expireDue(limit: configuration.batchSize)
                    metrics.objectsExpired.increment(by: expired)
                    if expired < configuration.batchSize || Task.isCancelled || Task.isShuttingDownGracefully { break }
                }
                if failing { logger.info("expiry works again") }
                failing = false
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { break }
                // Once per outage: the database may be down for a while.
                if !failing { logger.warning("expiry failed", metadata: ["error": "\(String(reflecting: error).prefix(300))"]) }
                failing = true
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.configuration.interval) }
        }
    }
}
