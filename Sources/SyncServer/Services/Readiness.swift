import Locking
import PartitionSync

/// What `/ready` reports besides a live database: the change listener is listening, and the
/// server is not stopping (a load balancer then sends new clients elsewhere while its sessions
/// wind down). Stopping is the session registry's: its wind-down is the graceful shutdown's
/// first step, and the one place that knows it began. (The server accepts requests only after
/// the migrations ran.)
final class Readiness: Sendable {
    private let listening = Locked(false)
    private let sessions: SessionRegistry

    init(sessions: SessionRegistry) {
        self.sessions = sessions
    }

    func listening(_ value: Bool) { listening.withLock { $0 = value } }

    var isReady: Bool { listening.withLock { $0 } && !sessions.isStopping }

    var isStopping: Bool { sessions.isStopping }
}
