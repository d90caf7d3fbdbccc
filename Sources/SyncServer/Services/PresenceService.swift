import Logging
import PartitionSync
import ServiceLifecycle
import SyncProtocol
import SyncStorage

/// Keeps this instance's presence rows alive and closes the users of instances that died
/// (docs/TRIGGERS.md, "Presence"). Sessions report their users' first opening and last closing.
final class PresenceService: Service, Sendable {
    let ledger: PresenceLedger
    let time: SyncClock
    let logger: Logger

    init(ledger: PresenceLedger, time: SyncClock, logger: Logger) {
        self.ledger = ledger
        self.time = time
        self.logger = logger
    }

    func run() async {
        let ledger = self.ledger
        await Periodic(every: ledger.lease / 3, time: time).run {
            do {
                // Bounded: a wait on a database that does not answer must not outlive the lease.
                try await withDeadline(ledger.lease, "presence upkeep") {
                    try await ledger.heartbeat()
                    try await ledger.reap()
                }
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                logger.warning("presence upkeep failed", metadata: ["error": "\(String(reflecting: error).prefix(300))"])
            }
        }
        // Leaving cleanly: this instance's users are closed now rather than when rows expire
        // (or, if the database does not answer soon, when they expire).
        _ = try? await withDeadline(.seconds(3), "closing this instance's users") { try await ledger.closeAll() }
    }

    func opened(_ userID: String) async {
        do {
            try await ledger.opened(userID)
        } catch {
            logger.warning("recording presence failed", metadata: ["userId": "\(userID)", "error": "\(error)"])
        }
    }

    func closed(_ userID: String) async {
        do {
            try await ledger.closed(userID)
        } catch {
            logger.warning("recording presence failed", metadata: ["userId": "\(userID)", "error": "\(error)"])
        }
    }
}
