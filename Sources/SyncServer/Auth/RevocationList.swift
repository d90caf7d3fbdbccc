import Foundation
import Locking
import PartitionSync
import SyncStorage

/// This instance's copy of the revoked credentials (`psync_revocations`): checking a request
/// or a session against it is a few hash lookups, never a query.
///
/// It is filled from the table whenever the change listener (re)connects, and kept current by
/// the `revoked:…` notifications in between; this instance's own revocations are added at
/// once. Observers (the session registry) hear of every change and close what it revokes.
final class RevocationList: Sendable {
    private struct State {
        /// Each revocation with when it lapses (`nil`: never).
        var entries: [Revocation: Date?] = [:]
        var insertsSincePrune = 0
        var observers: [@Sendable () -> Void] = []
    }

    private let state = Locked(State())
    /// The date lapsed entries are dropped against (``ServerConfiguration/time``).
    private let now: @Sendable () -> Date

    init(now: @escaping @Sendable () -> Date = SyncClock.system.now) {
        self.now = now
    }

    /// Whether any of these revocations is in force.
    func revokes(_ candidates: [Revocation]) -> Bool {
        guard !candidates.isEmpty else { return false }
        return state.withLock { state in candidates.contains { state.entries[$0] != nil } }
    }

    var count: Int { state.withLock { $0.entries.count } }

    /// Adds revocations (announced or made here).
    func add(_ revocations: [Revocation], expires: Date?) {
        guard !revocations.isEmpty else { return }
        let observers = state.withLock { state in
            for revocation in revocations {
                // Keep the later expiry; `nil` (for good) wins.
                var kept = expires
                if let current = state.entries[revocation] {
                    kept = current.flatMap { current in expires.map { max(current, $0) } }
                }
                state.entries.updateValue(kept, forKey: revocation)
            }
            state.insertsSincePrune += revocations.count
            if state.insertsSincePrune >= 1_024 {
                // Lapsed entries cover only tokens that expired; drop them now and then.
                let now = now()
                state.entries = state.entries.filter { $0.value.map { $0 > now } ?? true }
                state.insertsSincePrune = 0
            }
            return state.observers
        }
        for observer in observers { observer() }
    }

    /// Replaces the whole list with what the table holds.
    func replace(with entries: [Revocation: Date?]) {
        let observers = state.withLock { state in
            state.entries = entries
            state.insertsSincePrune = 0
            return state.observers
        }
        for observer in observers { observer() }
    }

    /// Calls `observer` after every change.
    func observe(_ observer: @escaping @Sendable () -> Void) {
        state.withLock { $0.observers.append(observer) }
    }
}
