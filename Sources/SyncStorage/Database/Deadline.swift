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
    let race = DeadlineRace<Result>(ticker: ticker)
    let description = what()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Result, any Error>) in
            let work = Task {
                do { race.finish(.success(try await operation())) } catch { race.finish(.failure(error)) }
            }
            let timer = timeout.map { timeout in
                ticker.schedule(after: timeout) {
                    race.finish(.failure(DeadlineError(description, timeout: timeout)))
                }
            }
            race.start(continuation, work: work, timer: timer)
        }
    } onCancel: {
        race.finish(.failure(CancellationError()))
    }
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
        let early = state.withLock { state -> Swift.Result<Result, any Error>? in
            if state.done {
                return state.early
            }
            state.continuation = continuation
            state.work = work
            state.timer = timer
            return nil
        }
        if let early {
            work.cancel()
            if let timer { ticker.cancel(timer) }
            continuation.resume(with: early)
        }
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
