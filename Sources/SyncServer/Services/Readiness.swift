import Locking
import PartitionSync

/// What `/ready` reports besides a live database: the change listener is listening, and the
/// server is not stopping (a load balancer then sends new clients elsewhere while its sessions
/// wind down). (The server accepts requests only after the migrations ran.)
final class Readiness: Sendable {
    private struct State {
        var listening = false
        var stopping = false
    }

    private let state = Locked(State())

    func listening(_ value: Bool) { state.withLock { $0.listening = value } }

    /// The graceful shutdown began: not ready again.
    func stopping() { state.withLock { $0.stopping = true } }

    var isReady: Bool { state.withLock { $0.listening && !$0.stopping } }

    var isStopping: Bool { state.withLock { $0.stopping } }
}
