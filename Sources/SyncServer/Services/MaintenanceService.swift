import Logging
import PartitionSync
import ServiceLifecycle
import SyncProtocol
import SyncStorage

/// Prunes what the database need not keep forever, every ``RetentionConfiguration/interval``:
/// old tombstones (clients offline longer get a reset), old upload outcomes (a request id
/// repeated later is applied as new), change events every trigger has passed, and ended
/// failed-login windows.
final class MaintenanceService: Service, Sendable {
    let store: ObjectStore
    let retention: RetentionConfiguration
    let failureWindow: Duration
    let time: SyncClock
    let logger: Logger

    init(store: ObjectStore, retention: RetentionConfiguration, failureWindow: Duration, time: SyncClock, logger: Logger) {
        self.store = store
        self.retention = retention
        self.failureWindow = failureWindow
        self.time = time
        self.logger = logger
    }

    func run() async {
        await Periodic(every: retention.interval, time: time).run {
            do {
                let tombstones = try await store.pruneTombstones(olderThan: retention.tombstones)
                let requests = try await store.pruneRequests(olderThan: retention.requests)
                let events = try await store.pruneEvents(olderThan: retention.events)
                try await store.pruneLoginFailures(olderThan: failureWindow)
                try await RevocationLedger(store: store).prune()
                if tombstones + requests + events > 0 {
                    logger.info("pruned", metadata: ["tombstones": "\(tombstones)", "requests": "\(requests)", "events": "\(events)"])
                }
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                logger.warning("maintenance failed", metadata: ["error": "\(String(reflecting: error).prefix(300))"])
            }
        }
    }
}

/// How long the server keeps what it prunes.
package struct RetentionConfiguration: Sendable, Hashable {
    /// Tombstones of deleted objects. Default 30 days: a client offline longer gets a reset.
    package var tombstones: Duration = .seconds(30 * 24 * 3600)
    /// Outcomes of uploads, for idempotent repeats. Default 7 days.
    package var requests: Duration = .seconds(7 * 24 * 3600)
    /// Change events every trigger has passed. Default 7 days.
    package var events: Duration = .seconds(7 * 24 * 3600)
    /// How often to prune. Default 1 hour.
    package var interval: Duration = .seconds(3600)

    package init() {}
}
