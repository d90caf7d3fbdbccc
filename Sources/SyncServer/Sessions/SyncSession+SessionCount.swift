import Locking
import Logging
import NIOWebSocket
import PartitionSync
import Synchronization
import SyncProtocol

extension SyncSession {
    /// Counts the session against its user's bound, once it is authenticated; when the user
    /// has as many sessions as allowed, the session is sent `too_many_sessions` and closed
    /// with 4003, and `false` is returned.
    func admitToSessionCount() -> Bool {
        let user = state.withLock { state -> String? in
            guard state.countedUser == nil else { return nil }
            return state.principal?.userID
        }
        guard let user else { return true }
        guard services.userSessions.claim(user) else {
            let limit = services.userSessions.limit
            send(.error(SyncError(.tooManySessions, "you have \(limit) sessions open; close one first"), partition: nil))
            close(.unknown(4003), SyncError.Code.tooManySessions.rawValue)
            return false
        }
        state.withLock { $0.countedUser = user }
        return true
    }

    /// Releases the session's place in its user's count.
    func leaveSessionCount() {
        let user = state.withLock { state -> String? in
            defer { state.countedUser = nil }
            return state.countedUser
        }
        if let user { services.userSessions.release(user) }
    }
}
