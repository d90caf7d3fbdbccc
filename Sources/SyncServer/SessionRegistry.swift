import NIOWebSocket
import Synchronization

/// The open sessions of this instance, for a graceful shutdown.
final class SessionRegistry: Sendable {
    private let sessions = Mutex<[ObjectIdentifier: SyncSession]>([:])

    func add(_ session: SyncSession) {
        sessions.withLock { $0[ObjectIdentifier(session)] = session }
    }

    func remove(_ session: SyncSession) {
        sessions.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(session)) }
    }

    var count: Int { sessions.withLock { $0.count } }

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
