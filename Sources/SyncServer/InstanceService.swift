import Logging
import ServiceLifecycle
import SyncStorage

/// Keeps this instance registered among those sharing the database, and tells the store
/// whether anyone else would hear its announcements: an instance alone on the database sends
/// no NOTIFY at all. A new instance registers before it serves (``SyncServer``); the others
/// notice it within one ``interval`` and announce from then on (until they do, it finds their
/// commits by polling).
final class InstanceService: Service, Sendable {
    let registry: InstanceRegistry
    let interval: Duration
    let logger: Logger

    init(registry: InstanceRegistry, interval: Duration, logger: Logger) {
        self.registry = registry
        self.interval = interval
        self.logger = logger
    }

    /// Registers this instance (before the server serves); tells the store whether it is alone.
    func register() async throws {
        registry.store.announceCommits(try await registry.heartbeat() > 0)
    }

    func run() async {
        let registry = self.registry
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                let others = try await withDeadline(interval * 5, "the instance heartbeat") { try await registry.heartbeat() }
                registry.store.announceCommits(others > 0)
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { break }
                // Not knowing who else runs: announce, to be safe.
                registry.store.announceCommits(true)
                logger.warning("instance heartbeat failed", metadata: ["error": "\(String(reflecting: error).prefix(300))"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: self.interval) }
        }
        _ = try? await withDeadline(.seconds(3), "leaving the instance registry") { try await registry.leave() }
    }
}
