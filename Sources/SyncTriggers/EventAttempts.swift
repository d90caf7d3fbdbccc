import PartitionSync

/// The attempts at handling one event on its own, without I/O: the first attempt, a retry
/// after each failure with backoff (``Trigger/RetryPolicy``), and a dead letter after the
/// last attempt, at once for a failure that would come back on every attempt, or before any
/// attempt for an event too deep. Shared by ordered triggers (within
/// ``TriggerRunnerStateMachine``) and concurrent ones (one per event).
struct EventAttempts: Sendable, Hashable {
    enum Action: Sendable, Hashable {
        /// Runs the handler (attempt 1, 2, …).
        case run(attempt: Int)
        /// Waits before the next attempt.
        case retry(after: Duration)
        /// Gives up: records the event as a dead letter, after `attempts` attempts.
        case deadLetter(attempts: Int, error: TriggerError)
    }

    let retry: Trigger.RetryPolicy
    /// The number of the attempt running or next to run.
    private(set) var attempt = 1

    init(retry: Trigger.RetryPolicy) {
        self.retry = retry
    }

    /// The first step for `event`: a dead letter for an event at or beyond `maximumDepth` (a
    /// cycle of triggers), the first attempt otherwise.
    mutating func start(_ event: ChangeEvent, maximumDepth: Int) -> Action {
        attempt = 1
        guard event.depth < maximumDepth else {
            return .deadLetter(
                attempts: 0,
                error: TriggerError(.depthExceeded, "event at depth \(event.depth) reached the limit of \(maximumDepth): a cycle of triggers?"))
        }
        return .run(attempt: 1)
    }

    /// The handler failed with `message`; `permanent`: the failure depends on the data alone
    /// and would come back (``TriggerRunner/isPermanent(_:)``).
    mutating func failed(_ message: String, permanent: Bool) -> Action {
        if attempt >= retry.attempts || permanent {
            return .deadLetter(attempts: attempt, error: TriggerError(.handlerFailed, message))
        }
        defer { attempt += 1 }
        return .retry(after: retry.backoff(afterAttempt: attempt))
    }

    /// The wait before the next attempt is over.
    func retried() -> Action {
        .run(attempt: attempt)
    }
}
