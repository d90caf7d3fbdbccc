import Foundation
import Locking
import NIOWebSocket
import PartitionSync
import ServiceLifecycle

/// The open sessions of this instance: it closes those that stay unauthenticated, outlive
/// their token or go idle (one sweep for all, twice a second, rather than a timer each), those
/// whose credential is revoked (at once, and again on every sweep, for a session that was
/// authenticating while the revocation arrived), and winds them all down for a graceful shutdown.
final class SessionRegistry: Service, Sendable {
    private let sessions = Locked<[ObjectIdentifier: SyncSession]>([:])
    let revocations: RevocationList

    init(revocations: RevocationList) {
        self.revocations = revocations
        revocations.observe { [weak self] in self?.closeRevoked() }
    }

    /// Closes the sessions whose credential is revoked.
    func closeRevoked() {
        let open = sessions.withLock { Array($0.values) }
        for session in open { session.closeIfRevoked(revocations) }
    }

    func add(_ session: SyncSession) {
        sessions.withLock { $0[ObjectIdentifier(session)] = session }
    }

    func remove(_ session: SyncSession) {
        sessions.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(session)) }
    }

    var count: Int { sessions.withLock { $0.count } }

    /// Sweeps the sessions for timeouts until shutdown.
    func run() async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .milliseconds(500)) }
            let open = sessions.withLock { Array($0.values) }
            let (now, date) = (ContinuousClock.now, Date())
            for session in open {
                session.closeIfRevoked(revocations)
                session.checkTimeouts(now: now, date: date)
            }
        }
    }

    /// Asks every session to close once its current upload is answered, and waits until they
    /// have, or until `timeout`.
    func windDown(timeout: Duration) async {
        let open = sessions.withLock { Array($0.values) }
        for session in open { session.beginShutdown() }
        let deadline = ContinuousClock.now + timeout
        while count > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}
