import Locking

/// An operation that did not finish within its time.
package struct DeadlineError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was waited for.
    package var what: String
    package var timeout: Duration

    package init(_ what: String, timeout: Duration) {
        self.what = what
        self.timeout = timeout
    }

    package var description: String { "\(what) did not finish within \(timeout)" }
}

/// Runs `operation` and returns its result, or throws ``DeadlineError`` once `timeout` has
/// passed, whether or not the operation heeds cancellation.
///
/// A task group cannot bound a wait: it returns only when every child has, and a child stuck
/// in a call that ignores cancellation (a query on a connection whose server vanished, a
/// lease from a pool that never answers) would hold it forever. Here the operation runs in a
/// task of its own that is cancelled at the deadline and left to end when it can; its result
/// is then dropped. Use it only for work whose late completion is harmless: trigger
/// transactions are fenced by their lease and position, so a late commit changes nothing.
/// Cancelling the caller ends the wait at once too (so `nil`, no deadline, waits for a task
/// in a way its waiter's cancellation can end).
///
/// The deadline is kept by ``DeadlineTicker``, not by a sleeping task of its own: a cancelled
/// `Task.sleep` keeps its task's memory until the sleep's deadline would have passed, and
/// trigger steps and upload transactions, bounded by 30–60 s and over in milliseconds, would
/// keep tens of megabytes that way under load.
///
/// - Parameter ticker: the ticker that keeps the deadline; the shared one unless the caller's
///   deadlines must not count among the process's (the test kit's).
package func withDeadline<Result: Sendable>(
    _ timeout: Duration?, _ what: @autoclosure () -> String, ticker: DeadlineTicker = .shared,
    _ operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await withDeadline(timeout, what(), ticker: ticker, renewable: { _ in try await operation() })
}

/// ``withDeadline(_:_:ticker:_:)`` for work that proves it is alive as it goes: each
/// ``DeadlineRenewal/renew()`` gives it `timeout` again from then (a trigger's handler
/// committing its work in parts: each part renews, so a run of many parts is bounded per
/// part, not as a whole).
package func withDeadline<Result: Sendable>(
    _ timeout: Duration?, _ what: @autoclosure () -> String, ticker: DeadlineTicker = .shared,
    renewable operation: @escaping @Sendable (DeadlineRenewal) async throws -> Result
) async throws -> Result {
    let race = DeadlineRace<Result>(ticker: ticker)
    let description = what()
    let schedule: @Sendable () -> DeadlineTicker.Entry? = {
        timeout.map { timeout in
            ticker.schedule(after: timeout) {
                race.finish(.failure(DeadlineError(description, timeout: timeout)))
            }
        }
    }
    let renewal = DeadlineRenewal { race.renew(schedule()) }
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Result, any Error>) in
            let work = Task {
                do { race.finish(.success(try await operation(renewal))) } catch { race.finish(.failure(error)) }
            }
            race.start(continuation, work: work, timer: schedule())
        }
    } onCancel: {
        race.finish(.failure(CancellationError()))
    }
}

/// Gives the work of ``withDeadline(_:_:ticker:renewable:)`` its whole timeout again.
package struct DeadlineRenewal: Sendable {
    fileprivate let renewing: @Sendable () -> Void

    package func renew() { renewing() }
}

/// The first of the operation, the deadline and a cancellation to finish resumes the waiter;
/// the operation is then cancelled (if it has not ended) and the deadline forgotten.
private final class DeadlineRace<Result: Sendable>: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Result, any Error>?
        var work: Task<Void, Never>?
        var timer: DeadlineTicker.Entry?
        /// Finished before the continuation was installed (cancelled at once).
        var early: Swift.Result<Result, any Error>?
        var done = false
    }

    private let state = Locked(State())
    private let ticker: DeadlineTicker

    init(ticker: DeadlineTicker) {
        self.ticker = ticker
    }

    func start(_ continuation: CheckedContinuation<Result, any Error>, work: Task<Void, Never>, timer: DeadlineTicker.Entry?) {
        let (early, stale) = state.withLock { state -> (Swift.Result<Result, any Error>?, [DeadlineTicker.Entry?]) in
            if state.done {
                defer { state.timer = nil }
                return (state.early, [timer, state.timer])
            }
            state.continuation = continuation
            state.work = work
            // The work renewed its deadline before it was started: the renewed one stands.
            guard state.timer == nil else { return (nil, [timer]) }
            state.timer = timer
            return (nil, [])
        }
        for case let entry? in stale { ticker.cancel(entry) }
        if let early {
            work.cancel()
            continuation.resume(with: early)
        }
    }

    /// Puts `timer` in place of the deadline (``DeadlineRenewal``); forgets it if the race is over.
    func renew(_ timer: DeadlineTicker.Entry?) {
        guard let timer else { return }
        let stale = state.withLock { state -> DeadlineTicker.Entry? in
            guard !state.done else { return timer }
            defer { state.timer = timer }
            return state.timer
        }
        if let stale { ticker.cancel(stale) }
    }

    func finish(_ result: Swift.Result<Result, any Error>) {
        let (continuation, work, timer) = state.withLock {
            state -> (CheckedContinuation<Result, any Error>?, Task<Void, Never>?, DeadlineTicker.Entry?) in
            guard !state.done else { return (nil, nil, nil) }
            state.done = true
            guard let continuation = state.continuation else {
                state.early = result
                return (nil, nil, nil)
            }
            state.continuation = nil
            defer {
                state.work = nil
                state.timer = nil
            }
            return (continuation, state.work, state.timer)
        }
        work?.cancel()
        if let timer { ticker.cancel(timer) }
        continuation?.resume(with: result)
    }
}
