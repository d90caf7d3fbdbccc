import CoreMetrics
import Logging
import ServiceLifecycle
import SyncProtocol
import SyncStorage

/// Deletes objects whose `@expiresAt` has come (``ObjectStore/expireDue(limit:)``), looking
/// every ``ExpiryConfiguration/interval``: as a client's `delete` would, so subscribers and
/// triggers see it. Every instance runs one; they do not delete an object twice.
final class ExpiryService: Service, Sendable {
    let store: ObjectStore
    let configuration: ExpiryConfiguration
    let metrics: ServerMetrics
    let time: SyncClock
    let logger: Logger

    init(store: ObjectStore, configuration: ExpiryConfiguration, metrics: ServerMetrics, time: SyncClock, logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.metrics = metrics
        self.time = time
        self.logger = logger
    }

    func run() async {
        var failing = false
        await Periodic(every: configuration.interval, time: time).run {
            do {
                while true {
                    let expired = try await store.expireDue(limit: configuration.batchSize)
                    metrics.objectsExpired.increment(by: expired)
                    if expired < configuration.batchSize || Task.isCancelled || Task.isShuttingDownGracefully { break }
                }
                if failing { logger.info("expiry works again") }
                failing = false
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                // Once per outage: the database may be down for a while.
                if !failing { logger.warning("expiry failed", metadata: ["error": "\(String(reflecting: error).prefix(300))"]) }
                failing = true
            }
        }
    }
}
