import Foundation
import PartitionSync
import ServiceLifecycle
import SyncProtocol
import SyncStorage

/// The handling transactions of ``TriggerRunner``: each runs handlers and advances the
/// trigger's position in one commit, fenced by the lease (``TriggerLedger/advanceOrLoseLease(_:holder:to:from:on:)``).
extension TriggerRunner {
    /// Handles a run of events in order in one transaction that also records the progress;
    /// returns how many of them it took (all, unless the transaction reached
    /// ``TriggerConfiguration/changesPerTransaction`` or ``TriggerConfiguration/bytesPerTransaction``
    /// first).
    func handleTogether(_ run: [ChangeEvent], from start: Int64) async throws -> Int {
        let (runtime, trigger, logger) = (self.runtime, self.trigger, runtime.logger(trigger: name))
        let changeBudget = max(1, runtime.configuration.changesPerTransaction)
        let byteBudget = max(1, runtime.configuration.bytesPerTransaction)
        let parts = partCommits(from: start)
        let taken = try await runtime.bounded("handling a run of trigger \(trigger.name)", renewable: { renewal in
            try await runtime.store.withWriteTransaction(author: "trigger:\(trigger.name)") { transaction in
                // The run's writes are staged and written together at commit: an object that
                // many events change is written once.
                transaction.defersWrites = true
                transaction.defersEncoding = true
                transaction.partCommits = parts.renewing(renewal)
                var taken = run.count
                if let runHandler = trigger.runHandler {
                    let matching = run.filter(trigger.matches)
                    transaction.depth = (matching.map(\.depth).max() ?? 0) + 1
                    var logger = logger
                    logger[metadataKey: "events"] = "\(matching.first!.position)-\(matching.last!.position)"
                    #if DEBUG
                    for event in matching { try Failpoint.fail(at: .triggerFails, for: trigger.name, position: event.position) }
                    #endif
                    try await runHandler(matching, TriggerContext(transaction: transaction, logger: logger, trigger: trigger.name))
                } else {
                    for (offset, event) in run.enumerated() where trigger.matches(event) {
                        transaction.depth = event.depth + 1
                        var logger = logger
                        logger[metadataKey: "event"] = "\(event.position)"
                        #if DEBUG
                        try Failpoint.fail(at: .triggerFails, for: trigger.name, position: event.position)
                        #endif
                        try await trigger.handler(event, TriggerContext(transaction: transaction, logger: logger, trigger: trigger.name))
                        if transaction.changeCount >= changeBudget || transaction.bytesRead >= byteBudget {
                            taken = offset + 1
                            break
                        }
                    }
                }
                #if DEBUG
                await Failpoint.pauseOnce(at: .triggerBeforeCommit, for: trigger.name)
                #endif
                try await runtime.advanceOrLoseLease(trigger.name, to: run[taken - 1].position, from: start, in: transaction)
                return taken
            }
        })
        recordHandled(run.prefix(taken).filter(trigger.matches))
        return taken
    }

    /// Handles one event in a transaction that also records the progress: for an ordered
    /// trigger from `start` to the event, for a concurrent one (`start` `nil`) to the batch's
    /// start, with a done-marker that makes a second handling do nothing.
    func handleOne(_ event: ChangeEvent, concurrent: Bool, from start: Int64?, to target: Int64) async throws {
        let (runtime, trigger, ledger) = (self.runtime, self.trigger, runtime.ledger)
        var logger = runtime.logger(trigger: name)
        logger[metadataKey: "event"] = "\(event.position)"
        // (A concurrent trigger's part would commit the event's done-marker.)
        let parts = concurrent ? nil : start.map(partCommits(from:))
        try await runtime.bounded("handling event \(event.position) of trigger \(trigger.name)", renewable: { [logger] renewal in
            try await runtime.store.withWriteTransaction(author: "trigger:\(trigger.name)", depth: event.depth + 1) { transaction in
                transaction.defersWrites = true
                transaction.defersEncoding = true
                if concurrent {
                    guard try await ledger.markDone(trigger.name, position: event.position, on: transaction.connection) else { return }
                }
                transaction.partCommits = parts?.renewing(renewal)
                #if DEBUG
                try Failpoint.fail(at: .triggerFails, for: trigger.name, position: event.position)
                #endif
                try await trigger.handler(event, TriggerContext(transaction: transaction, logger: logger, trigger: trigger.name))
                #if DEBUG
                await Failpoint.pauseOnce(at: .triggerBeforeCommit, for: trigger.name)
                #endif
                try await runtime.advanceOrLoseLease(trigger.name, to: target, from: start, in: transaction)
            }
        })
        recordHandled([event])
    }

    /// How a handling transaction of an ordered trigger whose position is at `start` commits
    /// a part (``TriggerContext/applyInParts(_:)``): only while no other instance took the
    /// lease and the position is still there, the trigger's row locked until the part commits (an
    /// instance taking the trigger over waits for it, and then reads what it committed). The
    /// part renews the lease: the runner's loop, busy in the handler, renews it only between
    /// steps, and a handler committing parts for longer than a lease would lose it.
    func partCommits(from start: Int64) -> WriteTransaction.PartCommits {
        let (runtime, name) = (self.runtime, self.name)
        var part = WriteTransaction.PartCommits(bytes: runtime.configuration.partBytes) { transaction in
            let (ledger, holder, duration) = (runtime.ledger, runtime.instance, runtime.configuration.leaseDuration)
            guard try await ledger.renewLease(name, holder: holder, duration: duration, from: start, on: transaction.connection) else {
                throw TriggerError(.leaseLost, "another instance took the lease, or the position moved, while the handler committed parts of its work")
            }
        }
        #if DEBUG
        part.committed = { await Failpoint.announceAndStop(at: .triggerPartCommitted, for: name) }
        #endif
        return part
    }

    /// Records `event` as a dead letter, in a transaction that also records the progress as
    /// ``handleOne(_:concurrent:from:to:)`` does.
    func deadLetter(_ event: ChangeEvent, attempts: Int, error: TriggerError, concurrent: Bool, from start: Int64?, to target: Int64) async throws {
        let (runtime, ledger, name) = (self.runtime, runtime.ledger, self.name)
        try await runtime.store.withWriteTransaction(author: "trigger:\(name)") { transaction in
            if concurrent {
                guard try await ledger.markDone(name, position: event.position, on: transaction.connection) else { return }
            }
            try await ledger.deadLetter(name, position: event.position, attempts: attempts, error: error.description, on: transaction.connection)
            try await runtime.advanceOrLoseLease(name, to: target, from: start, in: transaction)
        }
        runtime.metrics.deadLettered(name)
        runtime.logger.error("event dead-lettered", metadata: ["trigger": "\(name)", "event": "\(event.position)", "error": "\(error)"])
    }

    /// Handles the events of a concurrent trigger's batch, up to its maximum at a time, each
    /// with its attempts (``EventAttempts``) and at worst its dead letter; the position stays
    /// at `start` (the batch's start) until the batch is done.
    func handleConcurrently(_ events: [ChangeEvent], from start: Int64) async throws {
        guard case .concurrent(let maximum) = trigger.mode else { return }
        try await withThrowingTaskGroup(of: Void.self) { group in
            var running = 0
            for event in events {
                if running >= max(1, maximum) {
                    try await group.next()
                    running -= 1
                }
                group.addTask { try await self.attempt(event, from: start) }
                running += 1
            }
            try await group.waitForAll()
        }
    }

    /// One event of a concurrent trigger, driven by its ``EventAttempts``.
    private func attempt(_ event: ChangeEvent, from start: Int64) async throws {
        var attempts = EventAttempts(retry: trigger.retry)
        var step = attempts.start(event, maximumDepth: runtime.configuration.maximumDepth)
        while true {
            runtime.health.beat(name)
            switch step {
            case .run(let attempt):
                do {
                    try await handleOne(event, concurrent: true, from: nil, to: start)
                    return
                } catch {
                    guard case .failed(let message, let permanent) = Self.failure(error) else { throw error }
                    handlerFailed(event, attempt: attempt, message: message)
                    step = attempts.failed(message, permanent: permanent)
                }
            case .retry(let backoff):
                // A shutdown ends the wait; the event is handled again by whoever runs the trigger next.
                try await cancelWhenGracefulShutdown { [time = runtime.time] in try await time.sleep(for: backoff) }
                step = attempts.retried()
            case .deadLetter(let attempts, let error):
                try await runtime.bounded("dead-lettering event \(event.position) of trigger \(name)") {
                    try await self.deadLetter(event, attempts: attempts, error: error, concurrent: true, from: nil, to: start)
                }
                return
            }
        }
    }

    private func recordHandled(_ events: some Sequence<ChangeEvent>) {
        let now = runtime.time.now()
        for event in events {
            runtime.metrics.handled(name, delay: now.timeIntervalSince(event.created))
        }
    }
}

extension TriggerRuntime {
    /// Advances the trigger's position to `target` in `transaction` (or on its own, without
    /// one), only while this instance holds the lease and, with `start`, while the stored
    /// position is still there; throws ``TriggerError/Code/leaseLost`` otherwise, rolling the
    /// transaction back. The one place that says "advance or lose the lease".
    func advanceOrLoseLease(_ name: String, to target: Int64, from start: Int64? = nil, in transaction: WriteTransaction? = nil) async throws {
        let advanced =
            if let transaction {
                try await ledger.advance(name, holder: instance, to: target, from: start, on: transaction.connection)
            } else {
                try await ledger.advance(name, holder: instance, to: target)
            }
        guard advanced else {
            throw TriggerError(.leaseLost, "the lease expired, or the position moved (a commit whose answer was lost)")
        }
    }
}
