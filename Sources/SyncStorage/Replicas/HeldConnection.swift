import Locking
import PostgresNIO

/// A connection of a replica's pool, leased on a task of its own so that the wait for it can
/// be given up: postgres-nio's pool keeps a lease request waiting while it reconnects to a
/// replica that stopped (until its circuit breaker trips, 15 s or more), and only cancelling
/// the task that asked ends the request. That task holds the lease until ``release()``, which
/// the one who took the connection must call, whatever happened.
final class HeldConnection: Sendable {
    private struct State {
        /// The task that leases the connection and holds it.
        var holder: Task<Void, Never>?
        /// ``take()``, waiting for the connection.
        var taker: CheckedContinuation<PostgresConnection, any Error>?
        /// The holder, waiting for ``release()``.
        var holding: CheckedContinuation<Void, Never>?
        var released = false
    }

    private let client: PostgresClient
    private let state = Locked(State())

    init(_ client: PostgresClient) {
        self.client = client
    }

    /// The connection, once the holder has it; throws what the lease threw, or
    /// `CancellationError` when ``release()`` came first.
    func take() async throws -> PostgresConnection {
        try await withCheckedThrowingContinuation { taker in
            let released = state.withLock { state -> Bool in
                if !state.released { state.taker = taker }
                return state.released
            }
            guard !released else { return taker.resume(throwing: CancellationError()) }
            let holder = Task {
                do {
                    try await client.withOpenConnection { connection in
                        guard self.handOver(.success(connection)) else { return }  // released meanwhile
                        await self.untilReleased()
                    }
                } catch {
                    self.handOver(.failure(error))
                }
            }
            let cancel = state.withLock { state -> Bool in
                state.holder = holder
                return state.released
            }
            if cancel { holder.cancel() }
        }
    }

    /// Gives the connection back to the pool (or stops asking for it).
    func release() {
        let (holding, taker, holder) = state.withLock { state in
            state.released = true
            defer { (state.holding, state.taker) = (nil, nil) }
            return (state.holding, state.taker, state.holder)
        }
        holding?.resume()
        if let taker {
            // Still leasing: the lease request is cancelled, and the taker told.
            holder?.cancel()
            taker.resume(throwing: CancellationError())
        }
    }

    /// Resumes the taker, if it still waits; `false` when nobody took the result.
    @discardableResult
    private func handOver(_ result: Result<PostgresConnection, any Error>) -> Bool {
        let taker = state.withLock { state in
            defer { state.taker = nil }
            return state.released ? nil : state.taker
        }
        taker?.resume(with: result)
        return taker != nil
    }

    private func untilReleased() async {
        await withCheckedContinuation { holding in
            let released = state.withLock { state -> Bool in
                if !state.released { state.holding = holding }
                return state.released
            }
            if released { holding.resume() }
        }
    }
}
