import Locking
import Logging
import PartitionSync
import ServiceLifecycle
import SyncProtocol
import SyncStorage

/// Keeps this instance registered among those sharing the database, and tells the store
/// whether anyone else would hear its announcements: an instance alone on the database sends
/// no NOTIFY at all. A new instance registers before it serves (``SyncServer``) and says so on
/// the notification channel: the others' listeners turn their announcements on when they hear
/// it, and their heartbeats, every ``interval``, when the notification was missed. (A commit
/// an instance makes in the moment before it hears of a newcomer stays unannounced; the
/// version poll, ``ServerConfiguration/changePollInterval``, is the safety net for it.)
final class InstanceService: Service, Sendable {
    let registry: InstanceRegistry
    let interval: Duration
    let time: SyncClock
    let logger: Logger
    /// Arrivals of other instances heard so far: a heartbeat that counted no other instance
    /// turns announcements off only if none arrived while it ran.
    private let arrivals = Locked(0)

    init(registry: InstanceRegistry, interval: Duration, time: SyncClock, logger: Logger) {
        self.registry = registry
        self.interval = interval
        self.time = time
        self.logger = logger
    }

    /// Registers this instance (before the server serves); tells the store whether it is alone.
    func register() async throws {
        registry.store.announceCommits(try await registry.beat() > 0)
        try await registry.announceArrival()
    }

    /// Another instance announced its start (``InstanceRegistry/announceArrival()``): it hears
    /// this instance's commits only from their announcements, from now on.
    func arrived() {
        arrivals.withLock { arrivals in
            arrivals += 1
            registry.store.announceCommits(true)
        }
    }

    func run() async {
        let registry = self.registry
        await Periodic(every: interval, time: time).run {
            do {
                let before = arrivals.withLock { $0 }
                let others = try await withDeadline(interval * 5, "the instance heartbeat") { try await registry.beat() }
                arrivals.withLock { arrivals in
                    // Its count may predate an instance whose arrival was heard meanwhile.
                    registry.store.announceCommits(others > 0 || arrivals != before)
                }
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                // Not knowing who else runs: announce, to be safe.
                registry.store.announceCommits(true)
                logger.warning("instance heartbeat failed", metadata: ["error": "\(String(reflecting: error).prefix(300))"])
            }
        }
        _ = try? await withDeadline(.seconds(3), "leaving the instance registry") { try await registry.leave() }
    }
}
