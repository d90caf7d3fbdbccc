import Locking
import PartitionSync
import ServiceLifecycle

/// Runs a service once the HTTP server listens, so that a server that cannot listen (its port
/// in use) stops before any service has touched the database or logged anything: the error
/// that stopped it is the first thing it says.
struct AfterListening<Wrapped: Service>: Service {
    let service: Wrapped
    let gate: Gate

    init(_ service: Wrapped, gate: Gate) {
        self.service = service
        self.gate = gate
    }

    func run() async throws {
        guard await gate.wait() else { return }
        try await service.run()
    }
}

/// Opens once; until then waiters wait, and a waiter that is cancelled or asked to shut down
/// gracefully leaves with `false`.
final class Gate: Sendable {
    private struct State {
        var open = false
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var nextID = 0
    }

    private let state = Locked(State())

    func open() {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.open = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// Whether the gate opened (`false`: cancelled or shutting down first).
    func wait() async -> Bool {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        return await withTaskCancellationOrGracefulShutdownHandler {
            await withCheckedContinuation { continuation in
                let resume = state.withLock { state -> Bool? in
                    if state.open { return true }
                    if Task.isCancelled || Task.isShuttingDownGracefully { return false }
                    state.waiters[id] = continuation
                    return nil
                }
                if let resume { continuation.resume(returning: resume) }
            }
        } onCancelOrGracefulShutdown: {
            let waiter = self.state.withLock { $0.waiters.removeValue(forKey: id) }
            waiter?.resume(returning: false)
        }
    }
}
