import Logging
import PartitionSync
import ServiceLifecycle
import SyncProtocol
import SyncStorage

/// Runs one trigger on this instance: performs the actions of its
/// ``TriggerRunnerStateMachine`` (the lease, reads, handling transactions, dead letters,
/// waits) and reports their outcomes back to it. Every decision is the state machine's.
final class TriggerRunner: Service, Sendable {
    let trigger: Trigger
    let runtime: TriggerRuntime
    private let signal: WakeSignal

    init(trigger: Trigger, runtime: TriggerRuntime) {
        self.trigger = trigger
        self.runtime = runtime
        self.signal = WakeSignal(time: runtime.time)
    }

    var name: String { trigger.name }
    private var logger: Logger { runtime.logger(trigger: name) }
    private var now: Duration { runtime.stopwatch.elapsed }

    /// New events it may handle were numbered.
    func wake() { signal.signal() }

    func run() async {
        var machine = TriggerRunnerStateMachine(policy: .init(trigger: trigger, configuration: runtime.configuration))
        var action = machine.start()
        var stopping = false
        while true {
            if !stopping, isStopping {
                stopping = true
                action = machine.stop()
            }
            runtime.health.beat(name)
            let wasHolding = machine.holding
            switch action {
            case .stop:
                return
            case .releaseLease:
                await releaseLease()
                return
            case .register:
                action = await perform(&machine, "registering trigger \(name)") { [ledger = runtime.ledger, name] in
                    _ = try await ledger.register(name)
                } then: { $0.registered(now: $1) }
            case .acquireLease(let passed):
                let (ledger, name, holder, duration) = (runtime.ledger, name, runtime.instance, runtime.configuration.leaseDuration)
                do {
                    let lease = try await runtime.bounded("renewing the lease of trigger \(name)") {
                        try await ledger.acquireLease(name, holder: holder, duration: duration, passed: passed)
                    }
                    if machine.holding, lease?.continued == false {
                        logger.warning(
                            "the database is on another timeline (a failover): the trigger goes on from its stored position",
                            metadata: ["stored": "\(lease?.position ?? 0)", "passed": "\(machine.position)"])
                    }
                    action = machine.leaseAnswered(position: lease?.position, continued: lease?.continued ?? true, now: now)
                    if !wasHolding, machine.holding { logger.info("trigger lease taken", metadata: ["position": "\(machine.position)"]) }
                } catch {
                    action = failed(&machine, error)
                }
            case .waitForWake(let timeout):
                await waitUnlessStopping(for: signal, timeout: timeout)
                action = machine.waited(now: now)
            case .sleep(let duration):
                await sleepUnlessStopping(duration, on: runtime.time)
                action = machine.waited(now: now)
            case .read(let start):
                let (store, limit, filter, images) = (runtime.store, machine.policy.readLimit, trigger.filter, trigger.images)
                // Every read within the bytes budget: a batch of 100 events of 400 kB records
                // is 40 MB of text, and ten times that parsed.
                let bytes = runtime.configuration.runBytes
                do {
                    // Only the events the trigger may handle are read and decoded; the rest of
                    // the scanned range is passed over. Their images leave out what the trigger
                    // takes only when it changes.
                    let (events, through, full) = try await runtime.bounded("reading events for trigger \(name)") {
                        try await EventLog(store: store).events(after: start, limit: limit, scan: limit * 20, bytes: bytes, filter: filter, images: images)
                    }
                    action = machine.read(events, through: through, full: full, now: now)
                } catch {
                    action = failed(&machine, error)
                }
            case .runTogether(let run, let start):
                do {
                    let taken = try await handleTogether(run, from: start)
                    action = machine.ranTogether(taken: taken, now: now)
                } catch {
                    action = failed(&machine, error, in: .together)
                }
            case .runOne(let event, let start, let attempt):
                do {
                    try await handleOne(event, concurrent: false, from: start, to: event.position)
                    action = machine.handled(now: now)
                } catch {
                    action = failed(&machine, error, in: .attempt(event, attempt))
                }
            case .deadLetter(let event, let attempts, let error, let start):
                action = await perform(&machine, "dead-lettering event \(event.position) of trigger \(name)") {
                    try await self.deadLetter(event, attempts: attempts, error: error, concurrent: false, from: start, to: event.position)
                } then: { $0.handled(now: $1) }
            case .runConcurrently(let events, let start):
                do {
                    try await handleConcurrently(events, from: start)
                    action = machine.handled(now: now)
                } catch {
                    action = failed(&machine, error)
                }
            case .advance(let target):
                let (runtime, ledger, name) = (runtime, runtime.ledger, name)
                action = await perform(&machine, "advancing trigger \(name)") {
                    try await runtime.advanceOrLoseLease(name, to: target)
                    try await ledger.clearDone(name, through: target)
                } then: { $0.handled(now: $1) }
            }
        }
    }

    /// Performs a step bounded by the operation timeout and reports its outcome.
    private func perform(
        _ machine: inout TriggerRunnerStateMachine, _ what: @autoclosure () -> String, _ operation: @escaping @Sendable () async throws -> Void,
        then: (inout TriggerRunnerStateMachine, Duration) -> TriggerRunnerStateMachine.Action
    ) async -> TriggerRunnerStateMachine.Action {
        do {
            try await runtime.bounded(what(), operation)
            return then(&machine, now)
        } catch {
            return failed(&machine, error)
        }
    }

    /// What failed: a step of the loop, a run handled together, or an attempt at one event.
    enum Step {
        case loop
        case together
        case attempt(ChangeEvent, Int)
    }

    /// Reports a failed step to the state machine, logged and counted.
    private func failed(_ machine: inout TriggerRunnerStateMachine, _ error: any Error, in step: Step = .loop) -> TriggerRunnerStateMachine.Action {
        let failure = Self.failure(error)
        switch (failure, step) {
        case (.leaseLost, _):
            logger.notice("trigger lease lost")
        case (.failed, .together):
            logger.debug("a run of events failed together; handling them one by one", metadata: ["error": "\(error.logText)"])
        case (.failed(let message, _), .attempt(let event, let attempt)):
            handlerFailed(event, attempt: attempt, message: message)
        default:
            if case .attempt = step { runtime.metrics.failed(name) }
            if !isStopping {
                // The database went away, or a step timed out: a transaction may have committed
                // without its answer arriving, so the next step starts from the stored position.
                logger.warning("trigger loop failed; going on from the stored position", metadata: ["error": "\(error.logText)"])
            }
        }
        return machine.failed(failure, now: now)
    }

    /// An attempt at an event failed: counted and logged.
    func handlerFailed(_ event: ChangeEvent, attempt: Int, message: String) {
        runtime.metrics.failed(name)
        logger.warning("trigger handler failed", metadata: ["event": "\(event.position)", "attempt": "\(attempt)", "error": "\(message.prefix(300))"])
    }

    /// What the state machine makes of an error: a lost lease, the database unavailable
    /// (no attempt used up), or a failure that a retry may or may not cure.
    static func failure(_ error: any Error) -> TriggerRunnerStateMachine.Failure {
        if let error = error as? TriggerError, error.code == .leaseLost { return .leaseLost }
        if isDatabaseUnavailable(error) { return .unavailable(error.logText) }
        return .failed(String(describing: error), permanent: isPermanent(error))
    }

    /// Whether a handler's error would come back on a retry: a ``SyncError`` of the engine
    /// refusing the handler's own operations, which depends on the data alone. The database
    /// being unavailable, an internal error and everything else are retried.
    static func isPermanent(_ error: any Error) -> Bool {
        guard let error = error as? SyncError else { return false }
        return error.code != .internal && error.code != .unavailable
    }

    private func releaseLease() async {
        let (ledger, name, holder) = (runtime.ledger, name, runtime.instance)
        do {
            try await withDeadline(runtime.configuration.leaseRenewal * 2, "releasing the lease of \(name)", ticker: runtime.ticker) {
                try await ledger.releaseLease(name, holder: holder)
            }
        } catch {
            logger.notice("releasing a trigger lease failed; it expires instead", metadata: ["error": "\(error)"])
        }
    }
}
