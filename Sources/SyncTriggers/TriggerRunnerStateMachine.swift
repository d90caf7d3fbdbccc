import PartitionSync

/// The policy of one trigger's runner, without I/O: when to take and renew the lease, what
/// to read, which events to handle together in one transaction, when to split a failing run
/// into single events, when to retry, when to dead-letter, and where the position goes.
///
/// Each event (an answer of the database, a failure, the end of a wait) goes in through a
/// `mutating` method with the time on the runner's clock (``Stopwatch``), and the next
/// ``Action`` comes out; ``TriggerRunner`` performs it and reports the outcome. One action
/// is outstanding at a time. Unit-tested without a database (`TriggerRunnerStateMachineTests`).
///
/// The position is the last event this instance has handled or passed over. Every handling
/// transaction advances the stored position from where its handler started, and only while
/// the lease is held ("fenced", ``TriggerLedger/advanceOrLoseLease(_:holder:to:from:on:)``):
/// a runner that lost its lease, or whose commit answer was lost, cannot commit an event twice.
struct TriggerRunnerStateMachine: Sendable {
    enum Action: Sendable, Hashable {
        /// Makes sure the trigger has a row in the ledger (a new one starts at the log's end).
        case register
        /// Takes or renews the lease, storing `passed` with a renewal (the position passed
        /// over events the trigger does not handle); answer with ``leaseAnswered(position:now:)``.
        case acquireLease(passed: Int64?)
        /// Waits until the runner is woken (new events were numbered) or `timeout` passes;
        /// answer with ``waited(now:)``.
        case waitForWake(timeout: Duration)
        /// Waits `duration` (backoff, gathering); answer with ``waited(now:)``.
        case sleep(Duration)
        /// Reads the next batch of the events the trigger may handle after `position`;
        /// answer with ``read(_:through:now:)``.
        case read(after: Int64)
        /// Handles `events` (an ordered run: every matching one of them) in one transaction
        /// advancing the position from `from`; answer with ``ranTogether(taken:now:)``.
        case runTogether([ChangeEvent], from: Int64)
        /// Handles one event in a transaction advancing the position from `from` to it;
        /// answer with ``handled(now:)``.
        case runOne(ChangeEvent, from: Int64, attempt: Int)
        /// Records a dead letter for `event` in a transaction advancing the position from
        /// `from` to it; answer with ``handled(now:)``.
        case deadLetter(ChangeEvent, attempts: Int, error: TriggerError, from: Int64)
        /// Handles `events` concurrently (each with ``EventAttempts``), each marked done in its
        /// transaction; answer with ``handled(now:)``.
        case runConcurrently([ChangeEvent], from: Int64)
        /// Moves the stored position to `position` (after a concurrent batch) and forgets the
        /// batch's done-markers; answer with ``handled(now:)``.
        case advance(to: Int64)
        /// Gives the lease up and ends.
        case releaseLease
        /// Ends.
        case stop
    }

    /// Why an action failed, as ``TriggerRunner`` classifies its error.
    enum Failure: Sendable, Hashable {
        /// The fenced advance found the lease gone or the position moved.
        case leaseLost
        /// The database is unreachable: not the event's fault, no attempt is used up.
        case unavailable(String)
        /// Anything else (the handler threw, a step timed out); `permanent`: it would come
        /// back on every attempt.
        case failed(String, permanent: Bool)
    }

    /// The part of ``Trigger`` and ``TriggerConfiguration`` the policy reads.
    struct Policy: Sendable {
        var matches: @Sendable (ChangeEvent) -> Bool
        var concurrent: Bool
        /// A run handler takes every event of a read in one transaction.
        var handlesRuns: Bool
        var gathering: Duration
        var retry: Trigger.RetryPolicy
        var maximumDepth: Int
        /// Events one read takes at most: ``TriggerConfiguration/eventsPerRun`` for a run
        /// handler, ``TriggerConfiguration/batchSize`` otherwise.
        var readLimit: Int
        var eventsPerTransaction: Int
        var leaseRenewal: Duration
        var pollInterval: Duration

        init(trigger: Trigger, configuration: TriggerConfiguration) {
            matches = trigger.matches
            if case .concurrent = trigger.mode { concurrent = true } else { concurrent = false }
            handlesRuns = trigger.runHandler != nil
            gathering = trigger.gathering
            retry = trigger.retry
            maximumDepth = configuration.maximumDepth
            readLimit = handlesRuns ? configuration.eventsPerRun : configuration.batchSize
            eventsPerTransaction = configuration.eventsPerTransaction
            leaseRenewal = configuration.leaseRenewal
            pollInterval = configuration.pollInterval
        }
    }

    /// The answer the outstanding action awaits.
    enum Pending: Sendable, Hashable {
        case register
        case lease(then: Resume)
        case wait(then: Resume)
        case read
        case together(Batch)
        case one(Batch)
        case deadLetter(Batch)
        case concurrent(last: Int64, through: Int64)
        case advance(to: Int64, through: Int64)
        case stopped
    }

    /// Where to go on after a lease answer or a wait.
    enum Resume: Sendable, Hashable {
        case register
        case cycle
        case read
        case batch(Batch)
        case retry(Batch)
    }

    let policy: Policy
    /// The last event handled or passed over.
    private(set) var position: Int64 = 0
    private(set) var holding = false
    /// When the lease was last taken or renewed; `nil`: renew before the next step.
    private var renewed: Duration?
    /// When the last non-empty read was handled (for ``Trigger/gathering``).
    private var lastRun: Duration?
    /// The last read was full (its events or bytes at the limit): the trigger is behind and
    /// does not wait to gather.
    private var behind = false
    /// Changed only by the machine (and its batch extension).
    var pending = Pending.register

    init(policy: Policy) {
        self.policy = policy
    }

    /// The first action.
    mutating func start() -> Action {
        pending = .register
        return .register
    }

    // MARK: Events

    mutating func registered(now: Duration) -> Action {
        cycle(now: now)
    }

    /// The lease was taken or renewed (`position`: the stored one) or is held by another
    /// instance (`nil`). `continued`: it was last taken on the database's current timeline;
    /// `false` after a failover, when what this runner read and passed may be from commits
    /// the database no longer has (``TriggerLedger/Lease/continued``).
    mutating func leaseAnswered(position stored: Int64?, continued: Bool = true, now: Duration) -> Action {
        guard case .lease(var resume) = pending else { return unexpected() }
        guard let stored else {
            // Another instance holds it (or took it while this one was between renewals).
            holding = false
            renewed = nil
            return wait(.waitForWake(timeout: policy.leaseRenewal), then: .cycle)
        }
        if holding, continued {
            // A renewal may find the stored position further: a commit whose answer was lost.
            position = max(position, stored)
        } else {
            // A new lease, or a history that changed under this one: from the stored position,
            // and a batch read before is dropped (its events may be from a lost tail).
            if holding {
                switch resume {
                case .batch, .retry: resume = .cycle
                case .register, .cycle, .read: break
                }
            }
            position = stored
        }
        holding = true
        renewed = now
        return self.resume(resume, now: now)
    }

    mutating func waited(now: Duration) -> Action {
        guard case .wait(let resume) = pending else { return unexpected() }
        return self.resume(resume, now: now)
    }

    /// A read returned `events` (those the trigger may handle, in order) and scanned the log
    /// up to `through`; `full`: it stopped at its limit of events or bytes, so more may follow.
    mutating func read(_ events: [ChangeEvent], through: Int64, full: Bool, now: Duration) -> Action {
        guard case .read = pending else { return unexpected() }
        guard let last = events.last else {
            if through > position {
                pass(to: through)
                return cycle(now: now)
            }
            return wait(.waitForWake(timeout: policy.pollInterval), then: .cycle)
        }
        lastRun = now
        behind = full
        if policy.concurrent {
            pending = .concurrent(last: last.position, through: through)
            return .runConcurrently(events.filter(policy.matches), from: position)
        }
        return continueBatch(Batch(events: events, through: through, attempts: EventAttempts(retry: policy.retry)), now: now)
    }

    /// A run handled together took its first `taken` events (all, unless the transaction
    /// reached its change budget first).
    mutating func ranTogether(taken: Int, now: Duration) -> Action {
        guard case .together(var batch) = pending, (1...batch.run.count).contains(taken) else { return unexpected() }
        position = batch.run[taken - 1].position
        batch.index += taken
        batch.run = []
        return continueBatch(batch, now: now)
    }

    /// The outstanding ``Action/runOne(_:from:attempt:)``, ``Action/deadLetter(_:attempts:error:from:)``,
    /// ``Action/runConcurrently(_:from:)`` or ``Action/advance(to:)`` committed.
    mutating func handled(now: Duration) -> Action {
        switch pending {
        case .one(var batch), .deadLetter(var batch):
            position = batch.single.removeFirst().position
            return continueBatch(batch, now: now)
        case .concurrent(let last, let through):
            pending = .advance(to: last, through: through)
            return .advance(to: last)
        case .advance(let target, let through):
            position = target
            pass(to: through)
            return cycle(now: now)
        default:
            return unexpected()
        }
    }

    /// The outstanding action failed.
    mutating func failed(_ failure: Failure, now: Duration) -> Action {
        if failure == .leaseLost {
            // Another instance has it now, or the position moved under this one: start again
            // from the lease and the stored position.
            holding = false
            renewed = nil
            return cycle(now: now)
        }
        switch (pending, failure) {
        case (.register, _):
            return wait(.sleep(policy.leaseRenewal), then: .register)
        case (.together(var batch), .failed):
            // One event of the run may be poison: each is handled on its own, with its retries.
            batch.single = batch.run.filter(policy.matches)
            batch.attempts = EventAttempts(retry: policy.retry)
            return continueBatch(batch, now: now)
        case (.one(let batch), .failed(let message, let permanent)):
            var attempts = batch.attempts
            let next = attempts.failed(message, permanent: permanent)
            var retried = batch
            retried.attempts = attempts
            return step(next, batch: retried)
        default:
            // The database went away or a step timed out: a transaction may have committed
            // without its answer arriving, so the lease is renewed (taking the stored position
            // if it is further) before the next step.
            renewed = nil
            return wait(.sleep(policy.leaseRenewal), then: .cycle)
        }
    }

    /// The runner is stopping: gives the lease up if it holds it.
    mutating func stop() -> Action {
        pending = .stopped
        return holding ? .releaseLease : .stop
    }

    // MARK: Steps

    func leaseDue(now: Duration) -> Bool {
        guard holding, let renewed else { return true }
        return now - renewed >= policy.leaseRenewal
    }

    /// Moves the position past events the trigger does not handle, in memory: the next lease
    /// renewal or handled event stores it. (Storing it at once would cost a commit for every
    /// event anyone makes; after a restart the few events passed over since are read and
    /// passed over again.)
    mutating func pass(to target: Int64) {
        position = max(position, target)
    }

    mutating func wait(_ action: Action, then resume: Resume) -> Action {
        pending = .wait(then: resume)
        return action
    }

    private mutating func resume(_ resume: Resume, now: Duration) -> Action {
        switch resume {
        case .register: return start()
        case .cycle: return cycle(now: now)
        case .read:
            // After gathering: the lease may have come due meanwhile.
            if leaseDue(now: now) {
                pending = .lease(then: .read)
                return .acquireLease(passed: holding ? position : nil)
            }
            pending = .read
            return .read(after: position)
        case .batch(let batch): return continueBatch(batch, now: now)
        case .retry(let batch):
            // Backoffs add up to more than a lease: it is renewed before the next attempt.
            if leaseDue(now: now) {
                pending = .lease(then: .retry(batch))
                return .acquireLease(passed: position)
            }
            return step(batch.attempts.retried(), batch: batch)
        }
    }

    /// Between batches: the lease, then (for a trigger that gathers) the wait for its next
    /// run, then the next read.
    mutating func cycle(now: Duration) -> Action {
        if leaseDue(now: now) {
            pending = .lease(then: .cycle)
            return .acquireLease(passed: holding ? position : nil)
        }
        // A trigger that gathers its events waits until its next run is due, unless its last
        // read was full: it is behind, and runs at once.
        if policy.gathering > .zero, !behind, let lastRun, now < lastRun + policy.gathering {
            return wait(.sleep(lastRun + policy.gathering - now), then: .read)
        }
        pending = .read
        return .read(after: position)
    }

    /// An answer that does not fit the outstanding action: a bug of the runner. It starts
    /// again from the lease and the stored position, as after a failed step.
    private mutating func unexpected() -> Action {
        assertionFailure("trigger runner: an answer to an action that is not outstanding (\(pending))")
        renewed = nil
        return wait(.sleep(policy.leaseRenewal), then: .cycle)
    }
}
