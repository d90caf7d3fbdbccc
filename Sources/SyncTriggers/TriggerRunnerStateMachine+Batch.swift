import PartitionSync

/// An ordered trigger's batch: the events of one read, handled in runs of up to
/// ``TriggerConfiguration/eventsPerTransaction`` together, a failing run split into its
/// events, each with its ``EventAttempts``.
extension TriggerRunnerStateMachine {
    /// The events of one read, handled run by run.
    struct Batch: Sendable, Hashable {
        var events: [ChangeEvent]
        /// How far the read scanned (at least the last event).
        var through: Int64
        /// The first event not yet in a run.
        var index = 0
        /// The run being handled: `events[index..<index + run.count]`.
        var run: [ChangeEvent] = []
        /// The run's matching events still to handle one by one after it failed together.
        var single: [ChangeEvent] = []
        var attempts: EventAttempts
    }

    /// The next step of an ordered batch.
    mutating func continueBatch(_ batch: Batch, now: Duration) -> Action {
        var batch = batch
        while true {
            if let event = batch.single.first {
                batch.attempts = EventAttempts(retry: policy.retry)
                return step(batch.attempts.start(event, maximumDepth: policy.maximumDepth), batch: batch)
            }
            if let last = batch.run.last {
                // The run was handled one by one.
                pass(to: last.position)
                batch.index += batch.run.count
                batch.run = []
            }
            guard batch.index < batch.events.count else {
                pass(to: batch.through)
                return cycle(now: now)
            }
            if leaseDue(now: now) {
                pending = .lease(then: .batch(batch))
                return .acquireLease(passed: position)
            }
            let run = nextRun(of: batch)
            let matching = run.filter(policy.matches)
            if matching.isEmpty {
                pass(to: run.last!.position)
                batch.index += run.count
                continue
            }
            batch.run = run
            if run.count > 1, !matching.contains(where: { $0.depth >= policy.maximumDepth }) {
                pending = .together(batch)
                return .runTogether(run, from: position)
            }
            batch.single = matching
        }
    }

    /// The events of the next run: up to `eventsPerTransaction` matching ones (a run handler
    /// takes a whole read), stopping before one too deep, which goes alone (to its dead letter).
    private func nextRun(of batch: Batch) -> [ChangeEvent] {
        let perTransaction = max(1, policy.handlesRuns ? batch.events.count : policy.eventsPerTransaction)
        var run: [ChangeEvent] = []
        var handled = 0
        var index = batch.index
        while index < batch.events.count, handled < perTransaction {
            let event = batch.events[index]
            let matches = policy.matches(event)
            if matches {
                if event.depth >= policy.maximumDepth, handled > 0 { break }
                handled += 1
            }
            run.append(event)
            index += 1
            if matches, event.depth >= policy.maximumDepth { break }
        }
        return run
    }

    /// The action for the next attempt step of the first of `batch.single`.
    mutating func step(_ step: EventAttempts.Action, batch: Batch) -> Action {
        let event = batch.single[0]
        switch step {
        case .run(let attempt):
            pending = .one(batch)
            return .runOne(event, from: position, attempt: attempt)
        case .retry(let backoff):
            return wait(.sleep(backoff), then: .retry(batch))
        case .deadLetter(let attempts, let error):
            pending = .deadLetter(batch)
            return .deadLetter(event, attempts: attempts, error: error, from: position)
        }
    }
}
