import Foundation
import Locking
import NIOWebSocket
import PartitionSync
import ServiceLifecycle
import SyncProtocol
import SyncStorage

/// The open sessions of this instance: it closes those that stay unauthenticated, outlive
/// their token or go idle (one sweep for all, twice a second, rather than a timer each), those
/// whose credential is revoked (at once, and again on every sweep, for a session that was
/// authenticating while the revocation arrived), and winds them all down for a graceful shutdown.
final class SessionRegistry: Service, Sendable {
    private struct State {
        var sessions: [ObjectIdentifier: SyncSession] = [:]
        /// Who waits for the last session to end (``windDown(timeout:)``), by id.
        var emptyWaiters: [Int: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter = 0
        /// The graceful shutdown began (``windDown(timeout:)``).
        var stopping = false
    }

    private let state = Locked(State())
    let revocations: RevocationList
    let time: SyncClock
    /// How often the sessions are checked for timeouts.
    let sweepInterval: Duration

    init(revocations: RevocationList, time: SyncClock, sweepInterval: Duration = .milliseconds(500)) {
        self.revocations = revocations
        self.time = time
        self.sweepInterval = sweepInterval
        revocations.observe { [weak self] in self?.closeRevoked() }
    }

    /// Closes the sessions whose credential is revoked.
    func closeRevoked() {
        let open = state.withLock { Array($0.sessions.values) }
        for session in open { session.closeIfRevoked(revocations) }
    }

    /// Adds an open session; `false` once the shutdown began (the caller then shuts it down).
    func add(_ session: SyncSession) -> Bool {
        state.withLock { state in
            state.sessions[ObjectIdentifier(session)] = session
            return !state.stopping
        }
    }

    func remove(_ session: SyncSession) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.sessions.removeValue(forKey: ObjectIdentifier(session))
            guard state.sessions.isEmpty else { return [] }
            defer { state.emptyWaiters.removeAll() }
            return Array(state.emptyWaiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    var count: Int { state.withLock { $0.sessions.count } }

    /// How many open sessions hold a task (their worker or reader): none once each is idle (a
    /// finished task kept by its handle keeps its whole stack).
    var tasksHeld: Int {
        let open = state.withLock { Array($0.sessions.values) }
        return open.count { $0.holdsTask }
    }

    /// The graceful shutdown began (``windDown(timeout:)``): no session is added any more.
    var isStopping: Bool { state.withLock { $0.stopping } }

    /// Sweeps the sessions for timeouts until shutdown.
    func run() async {
        await Periodic(every: sweepInterval, time: time, startsAtOnce: false).run { sweep() }
    }

    /// Closes the sessions that are revoked, stayed unauthenticated, outlived their token or
    /// went idle, as of now.
    func sweep() {
        let open = state.withLock { Array($0.sessions.values) }
        let (now, date) = (time.uptime(), time.now())
        for session in open {
            session.closeIfRevoked(revocations)
            session.checkTimeouts(now: now, date: date)
        }
    }

    /// Asks every session to close once its current upload is answered, and waits until they
    /// have, or until `timeout`.
    func windDown(timeout: Duration) async {
        let open = state.withLock { state in
            state.stopping = true
            return Array(state.sessions.values)
        }
        for session in open { session.beginShutdown() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.emptied() }
            group.addTask { [time] in try? await time.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Returns once no session is open, or when its task is cancelled.
    private func emptied() async {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = state.withLock { state -> Bool in
                    if state.sessions.isEmpty || Task.isCancelled { return true }
                    state.emptyWaiters[id] = continuation
                    return false
                }
                if done { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.emptyWaiters.removeValue(forKey: id) }?.resume()
        }
    }
}
