import CoreMetrics
import Foundation
import Locking
import Logging
import PartitionSync
import ServiceLifecycle
import SyncProtocol
import SyncStorage

/// Runs an application's triggers: numbers committed events (the sequencer) and, for each
/// trigger whose lease this instance holds, hands its events to the handler.
///
/// Every instance runs the sequencer (its passes serialize in the database) and competes for
/// each trigger's lease; the holder renews it every ``TriggerConfiguration/leaseRenewal`` and
/// another instance takes over at most ``TriggerConfiguration/leaseDuration`` after it stops.
/// Each handling transaction checks the lease before it commits, so an instance that lost its
/// lease cannot commit an event twice.
package final class TriggerService: Service, Sendable {
    package let triggers: [Trigger]
    let store: ObjectStore
    let configuration: TriggerConfiguration
    let instance: String
    let logger: Logger
    let metrics: TriggerMetrics
    let sequencerSignal = WakeSignal()
    let runnerSignals: [String: WakeSignal]
    /// The last position this instance's sequencer numbered.
    let sequencedHere = Locked<Int64>(0)
    /// What the watchdog last found (`/health/triggers`).
    package let health: TriggerHealth

    /// - Parameters:
    ///   - instance: this server instance's name, recorded as the lease holder.
    ///   - metricsFactory: where per-trigger lag and failures are reported.
    package init(
        store: ObjectStore, triggers: [Trigger], configuration: TriggerConfiguration = .init(), instance: String,
        metricsFactory: any MetricsFactory, logger: Logger
    ) {
        self.store = store
        self.triggers = triggers
        self.configuration = configuration
        self.instance = instance
        self.logger = logger
        self.metrics = TriggerMetrics(factory: metricsFactory)
        self.runnerSignals = Dictionary(uniqueKeysWithValues: triggers.map { ($0.name, WakeSignal()) })
        self.health = TriggerHealth(names: triggers.map(\.name), configuration: configuration)
    }

    /// Runs one step of a loop, giving up after ``TriggerConfiguration/operationTimeout``
    /// (``withDeadline(_:_:_:)``): no step can hold a loop forever.
    func bounded<Result: Sendable>(_ what: @autoclosure () -> String, _ operation: @escaping @Sendable () async throws -> Result) async throws -> Result {
        try await withDeadline(configuration.operationTimeout, what(), operation)
    }

    /// A notification arrived: new events were committed, or numbered.
    package func notified(_ notification: ChangeNotification) {
        switch notification {
        case .eventsRecorded:
            sequencerSignal.signal()
        case .sequenced(let last):
            // This instance's own passes woke the runners they concern already; another
            // instance's pass wakes them all.
            guard last > sequencedHere.withLock({ $0 }) else { return }
            for signal in runnerSignals.values { signal.signal() }
        case .committed, .instanceArrived, .revoked:
            break
        }
    }

    package func run() async throws {
        // Commits of this process that recorded events wake the sequencer at once; other
        // instances' commits arrive as `events` notifications.
        store.observeCommits { [sequencerSignal] commit in
            if commit.recordedEvents > 0 { sequencerSignal.signal() }
        }
        await withDiscardingTaskGroup { group in
            group.addTask { await self.watchRegistrations() }
            group.addTask { await self.runSequencer() }
            group.addTask { await self.watch() }
            for trigger in triggers {
                group.addTask { await self.run(trigger) }
            }
        }
    }

    private var isStopping: Bool { Task.isCancelled || Task.isShuttingDownGracefully }

    // MARK: Which events are recorded

    /// The events this instance's triggers handle.
    package var interest: EventInterest {
        let triggers = self.triggers
        return .matching { event in triggers.contains { $0.matches(event) } }
    }

    /// Keeps the store recording the events of this instance's triggers, or every event while
    /// another instance runs (or is about to run) a trigger this one does not know, as during
    /// a rolling deployment that adds one. Looks every ``TriggerConfiguration/pollInterval``;
    /// until the first look, and when a look fails, every event is recorded.
    private func watchRegistrations() async {
        let local = Set(triggers.map(\.name))
        let ledger = TriggerLedger(store: store)
        var recordingAll = true
        store.recordEvents(.all)
        while !isStopping {
            do {
                let foreign = try await bounded("reading the registered triggers") { try await ledger.activeNames() }
                    .filter { !local.contains($0) }.sorted()
                if foreign.isEmpty == recordingAll {
                    recordingAll = !foreign.isEmpty
                    store.recordEvents(recordingAll ? .all : interest)
                    if recordingAll {
                        logger.notice("another instance runs triggers this one does not: recording every event", metadata: ["triggers": "\(foreign)"])
                    }
                }
            } catch {
                if isStopping { return }
                if !recordingAll {
                    recordingAll = true
                    store.recordEvents(.all)
                }
                logger.warning("reading the registered triggers failed", metadata: ["error": "\(String(reflecting: error).prefix(300))"])
            }
            await sleepUnlessStopping(configuration.pollInterval)
        }
    }

    private func sleepUnlessStopping(_ duration: Duration) async {
        try? await cancelWhenGracefulShutdown { try await Task.sleep(for: duration) }
    }

    // MARK: The sequencer

    /// The most events one pass of the sequencer numbers.
    static let sequencingLimit = 10_000

    private func runSequencer() async {
        let store = self.store
        while !isStopping {
            if configuration.sequencingDelay > .zero { await sleepUnlessStopping(configuration.sequencingDelay) }
            do {
                // Only the runners of triggers the numbered events may concern are woken.
                var shapes: Set<EventLog.Shape> = []
                while let pass = try await bounded("a sequencing pass", { try await EventLog(store: store).sequencePass(limit: Self.sequencingLimit) }) {
                    shapes.formUnion(pass.shapes)
                    sequencedHere.withLock { $0 = max($0, pass.last) }
                    // A pass below its limit numbered every event committed before it began;
                    // the commits since then signalled, and wait for the next delay. (Going on
                    // at once made a pass per commit under load, each its own transaction.)
                    if pass.count < Self.sequencingLimit { break }
                }
                for trigger in triggers where shapes.contains(where: trigger.filter.passes) {
                    runnerSignals[trigger.name]?.signal()
                }
            } catch {
                if isStopping { return }
                logger.warning("sequencing events failed", metadata: ["error": "\(String(reflecting: error).prefix(300))"])
            }
            await sequencerSignal.wait(timeout: configuration.pollInterval)
        }
    }

    // MARK: Running one trigger

    private func run(_ trigger: Trigger) async {
        let ledger = TriggerLedger(store: store)
        let signal = runnerSignals[trigger.name]!
        var runner = Runner(trigger: trigger, service: self, ledger: ledger)
        while !isStopping {
            health.beat(trigger.name)
            do {
                _ = try await bounded("registering trigger \(trigger.name)") { try await ledger.register(trigger.name) }
                break
            } catch {
                if isStopping { break }
                logger.warning("registering a trigger failed", metadata: ["trigger": "\(trigger.name)", "error": "\(String(reflecting: error).prefix(300))"])
                await sleepUnlessStopping(configuration.leaseRenewal)
            }
        }
        var lastRun = ContinuousClock.now - .seconds(3600)
        var behind = false
        let store = self.store
        let configuration = self.configuration
        while !isStopping {
            health.beat(trigger.name)
            do {
                guard try await runner.holdLease() else {
                    await signal.wait(timeout: configuration.leaseRenewal)
                    continue
                }
                // A trigger that gathers its events waits until its next run is due (unless
                // its last read was full: it is behind, and runs at once).
                if trigger.gathering > .zero, !behind, ContinuousClock.now < lastRun + trigger.gathering {
                    await sleepUnlessStopping(lastRun + trigger.gathering - ContinuousClock.now)
                }
                // Only the events the trigger may handle are read and decoded; the rest of
                // the scanned range is passed over.
                let start = runner.position
                let (events, through) = try await bounded("reading events for trigger \(trigger.name)") {
                    try await EventLog(store: store).events(
                        after: start, limit: configuration.batchSize, scan: configuration.batchSize * 20, filter: trigger.filter)
                }
                if events.isEmpty {
                    if through > runner.position {
                        runner.pass(to: through)
                        continue
                    }
                    await signal.wait(timeout: configuration.pollInterval)
                    continue
                }
                lastRun = .now
                behind = events.count == configuration.batchSize
                try await runner.handle(events)
                if runner.position < through { runner.pass(to: through) }
            } catch let error as TriggerError where error.code == .leaseLost {
                logger.notice("trigger lease lost", metadata: ["trigger": "\(trigger.name)"])
                runner.dropLease()
            } catch {
                if isStopping { break }
                // The database went away, or a step timed out: a transaction may have committed
                // without its answer arriving, so the next step starts from the stored position.
                logger.warning("trigger loop failed; going on from the stored position", metadata: ["trigger": "\(trigger.name)", "error": "\(String(reflecting: error).prefix(300))"])
                runner.resync()
                await sleepUnlessStopping(configuration.leaseRenewal)
            }
        }
        if runner.holding {
            let (name, holder) = (trigger.name, instance)
            do {
                try await withDeadline(configuration.leaseRenewal * 2, "releasing the lease of \(name)") {
                    try await ledger.releaseLease(name, holder: holder)
                }
            } catch {
                logger.notice("releasing a trigger lease failed; it expires instead", metadata: ["trigger": "\(name)", "error": "\(error)"])
            }
        }
    }

    // MARK: The watchdog

    /// Every ``TriggerConfiguration/pollInterval``, reads each trigger's stored position and
    /// lease, apart from the loops: the lag metric and ``health`` stay true when a loop hangs.
    private func watch() async {
        let ledger = TriggerLedger(store: store)
        let store = self.store
        while !isStopping {
            do {
                let (head, statuses) = try await bounded("reading the triggers' state") {
                    (try await EventLog(store: store).head(), try await ledger.statuses())
                }
                let now = Date()
                for trigger in triggers {
                    guard let status = statuses.first(where: { $0.name == trigger.name }) else { continue }
                    let lag = max(0, head - status.position)
                    metrics.lag(trigger.name, events: Int(lag))
                    let holder = status.leaseExpires.map { $0 > now } == true ? status.leaseHolder : nil
                    health.observed(trigger.name, lag: lag, leaseHolder: holder)
                }
                health.checked()
                for report in health.reports where !report.problems.isEmpty {
                    logger.warning("trigger unhealthy", metadata: [
                        "trigger": "\(report.name)", "problems": "\(report.problems.map(\.rawValue))", "lag": "\(report.lag)",
                    ])
                }
            } catch {
                if isStopping { return }
                logger.debug("the trigger watchdog could not read the ledger", metadata: ["error": "\(String(reflecting: error).prefix(300))"])
            }
            await sleepUnlessStopping(configuration.pollInterval)
        }
    }

    /// One trigger's loop state on this instance.
    struct Runner {
        let trigger: Trigger
        let service: TriggerService
        let ledger: TriggerLedger
        var position: Int64 = 0
        var holding = false
        var renewed = ContinuousClock.now - .seconds(3600)

        var name: String { trigger.name }
        var configuration: TriggerConfiguration { service.configuration }

        /// Takes or renews the lease when due; whether this instance holds it. The renewal also
        /// stores how far the trigger has passed over events it does not handle.
        mutating func holdLease() async throws -> Bool {
            if holding, ContinuousClock.now - renewed < configuration.leaseRenewal { return true }
            let (ledger, name, holder, duration) = (self.ledger, self.name, service.instance, configuration.leaseDuration)
            let passed = holding ? self.position : nil
            let position = try await service.bounded("renewing the lease of trigger \(name)") {
                try await ledger.acquireLease(name, holder: holder, duration: duration, passed: passed)
            }
            if let position {
                if !holding { service.logger.info("trigger lease taken", metadata: ["trigger": "\(name)", "position": "\(position)"]) }
                self.position = max(self.position, position)
                if !holding { self.position = position }
                holding = true
                renewed = .now
            } else {
                holding = false
            }
            return holding
        }

        mutating func dropLease() {
            holding = false
            renewed = .now - .seconds(3600)
        }

        /// After a failed step: renews the lease before the next one, taking the stored
        /// position if it is further (a commit whose answer was lost).
        mutating func resync() {
            renewed = .now - .seconds(3600)
        }

        /// Handles a batch of events in order (or concurrently), advancing the position.
        mutating func handle(_ events: [ChangeEvent]) async throws {
            switch trigger.mode {
            case .ordered:
                var index = 0
                while index < events.count {
                    guard try await holdLease() else { throw TriggerError(.leaseLost, "lease expired") }
                    // A run of events with up to `eventsPerTransaction` to handle, stopping before
                    // one too deep (which is dead-lettered on its own).
                    var run: [ChangeEvent] = []
                    var handled = 0
                    // A run handler folds its events: it takes all that were read at once.
                    let perTransaction = trigger.runHandler == nil ? configuration.eventsPerTransaction : configuration.batchSize
                    while index < events.count, handled < max(1, perTransaction) {
                        let event = events[index]
                        if trigger.matches(event) {
                            if event.depth >= configuration.maximumDepth, handled > 0 { break }
                            handled += 1
                        }
                        run.append(event)
                        index += 1
                        if event.depth >= configuration.maximumDepth, trigger.matches(event) { break }
                    }
                    if handled == 0 {
                        pass(to: run.last!.position)
                        continue
                    }
                    let together = run.count > 1 && !run.contains { trigger.matches($0) && $0.depth >= configuration.maximumDepth }
                    if together {
                        do {
                            let taken = try await handleTogether(run)
                            position = run[taken - 1].position
                            // The events the transaction left go to the next run.
                            index -= run.count - taken
                            continue
                        } catch let error as TriggerError where error.code == .leaseLost {
                            throw error
                        } catch {
                            // Without a database, one by one would fail as well.
                            if isDatabaseUnavailable(error) { throw error }
                            service.logger.debug("a run of events failed together; handling them one by one", metadata: ["trigger": "\(name)"])
                        }
                    }
                    // One by one, each with its retries and, at worst, its dead letter.
                    for event in run where trigger.matches(event) {
                        try await handleOne(event, concurrent: false)
                        position = event.position
                    }
                    pass(to: run.last!.position)
                }
            case .concurrent(let maximum):
                let matching = events.filter(trigger.matches)
                let runner = self
                try await withThrowingTaskGroup(of: Void.self) { group in
                    var running = 0
                    for event in matching {
                        if running >= max(1, maximum) {
                            try await group.next()
                            running -= 1
                        }
                        group.addTask { try await runner.handleOne(event, concurrent: true) }
                        running += 1
                    }
                    try await group.waitForAll()
                }
                try await advance(to: events.last!.position)
                let (ledger, name, last) = (self.ledger, self.name, events.last!.position)
                try await service.bounded("clearing done-markers of trigger \(name)") { try await ledger.clearDone(name, through: last) }
            }
        }

        /// Moves the position past events the trigger does not handle, in memory: the next
        /// lease renewal or handled event stores it. (Storing it at once would cost a commit
        /// for every event anyone makes; after a restart the few events passed over since are
        /// read and passed over again.)
        mutating func pass(to target: Int64) {
            position = max(position, target)
        }

        /// Moves the position past events, stored at once.
        mutating func advance(to target: Int64) async throws {
            let ledger = self.ledger
            let name = self.name
            let holder = service.instance
            let advanced = try await service.bounded("advancing trigger \(name)") { try await ledger.advance(name, holder: holder, to: target) }
            guard advanced else { throw TriggerError(.leaseLost, "lease expired") }
            position = target
        }

        /// Handles a run of events in order in one transaction that also records the progress;
        /// returns how many of them it took (all, unless the transaction reached
        /// `changesPerTransaction` first).
        func handleTogether(_ run: [ChangeEvent]) async throws -> Int {
            let service = self.service
            let ledger = self.ledger
            let trigger = self.trigger
            let holder = service.instance
            let changeBudget = max(1, configuration.changesPerTransaction)
            let start = position
            service.health.beat(trigger.name)
            let taken = try await service.bounded("handling a run of trigger \(trigger.name)") {
              try await service.store.withWriteTransaction(author: "trigger:\(trigger.name)") { transaction in
                // The run's writes are staged and written together at commit: an object that
                // many events change is written once.
                transaction.defersWrites = true
                transaction.defersEncoding = true
                var taken = run.count
                if let runHandler = trigger.runHandler {
                    let matching = run.filter(trigger.matches)
                    transaction.depth = (matching.map(\.depth).max() ?? 0) + 1
                    var logger = service.logger
                    logger[metadataKey: "trigger"] = "\(trigger.name)"
                    logger[metadataKey: "events"] = "\(matching.first!.position)-\(matching.last!.position)"
                    #if DEBUG
                    for event in matching { try Failpoint.fail(at: .triggerFails, for: trigger.name, position: event.position) }
                    #endif
                    try await runHandler(matching, TriggerContext(transaction: transaction, logger: logger, trigger: trigger.name))
                } else {
                    for (offset, event) in run.enumerated() where trigger.matches(event) {
                        transaction.depth = event.depth + 1
                        var logger = service.logger
                        logger[metadataKey: "trigger"] = "\(trigger.name)"
                        logger[metadataKey: "event"] = "\(event.position)"
                        try Failpoint.fail(at: .triggerFails, for: trigger.name, position: event.position)
                        try await trigger.handler(event, TriggerContext(transaction: transaction, logger: logger, trigger: trigger.name))
                        if transaction.changeCount >= changeBudget {
                            taken = offset + 1
                            break
                        }
                    }
                }
                await Failpoint.pauseOnce(at: .triggerBeforeCommit, for: trigger.name)
                guard try await ledger.advance(trigger.name, holder: holder, to: run[taken - 1].position, from: start, on: transaction.connection) else {
                    throw TriggerError(.leaseLost, "the lease expired, or the position moved (a commit whose answer was lost)")
                }
                return taken
              }
            }
            let now = Date()
            for event in run.prefix(taken) where trigger.matches(event) {
                service.metrics.handled(trigger.name, delay: now.timeIntervalSince(event.created))
            }
            return taken
        }

        /// Handles one event in a transaction that also records the progress, retrying with
        /// backoff; after the last attempt the event is dead-lettered and the trigger goes on.
        func handleOne(_ event: ChangeEvent, concurrent: Bool) async throws {
            let service = self.service
            let ledger = self.ledger
            let trigger = self.trigger
            let holder = service.instance
            let position = self.position
            if event.depth >= configuration.maximumDepth {
                let error = TriggerError(.depthExceeded, "event at depth \(event.depth) reached the limit of \(configuration.maximumDepth): a cycle of triggers?")
                try await deadLetter(event, attempts: 0, error: error, concurrent: concurrent)
                return
            }
            var attempt = 1
            while true {
                service.health.beat(trigger.name)
                do {
                  try await service.bounded("handling event \(event.position) of trigger \(trigger.name)") {
                    try await service.store.withWriteTransaction(author: "trigger:\(trigger.name)", depth: event.depth + 1) { transaction in
                        transaction.defersWrites = true
                        transaction.defersEncoding = true
                        if concurrent {
                            guard try await ledger.markDone(trigger.name, position: event.position, on: transaction.connection) else { return }
                        }
                        var logger = service.logger
                        logger[metadataKey: "trigger"] = "\(trigger.name)"
                        logger[metadataKey: "event"] = "\(event.position)"
                        try Failpoint.fail(at: .triggerFails, for: trigger.name, position: event.position)
                        try await trigger.handler(event, TriggerContext(transaction: transaction, logger: logger, trigger: trigger.name))
                        let target = concurrent ? position : event.position
                        await Failpoint.pauseOnce(at: .triggerBeforeCommit, for: trigger.name)
                        guard try await ledger.advance(
                            trigger.name, holder: holder, to: target, from: concurrent ? nil : position, on: transaction.connection)
                        else {
                            throw TriggerError(.leaseLost, "the lease expired, or the position moved (a commit whose answer was lost)")
                        }
                    }
                  }
                    service.metrics.handled(trigger.name, delay: Date().timeIntervalSince(event.created))
                    return
                } catch let error as TriggerError where error.code == .leaseLost {
                    throw error
                } catch {
                    service.metrics.failed(trigger.name)
                    // The database went away: not the event's fault. No attempt is used up and no
                    // dead letter written; the loop waits and goes on from the stored position.
                    if isDatabaseUnavailable(error) { throw error }
                    let text = String(describing: error)
                    service.logger.warning(
                        "trigger handler failed",
                        metadata: ["trigger": "\(trigger.name)", "event": "\(event.position)", "attempt": "\(attempt)", "error": "\(text.prefix(300))"])
                    // A refusal of the handler's writes (an invalid path, a type mismatch, a body over
                    // the limit) comes from the data and would come back on every attempt: it is
                    // dead-lettered at once, so the events behind it do not wait for the retries.
                    if attempt >= trigger.retry.attempts || Self.isPermanent(error) {
                        try await deadLetter(event, attempts: attempt, error: TriggerError(.handlerFailed, text), concurrent: concurrent)
                        return
                    }
                    let backoff = trigger.retry.backoff(afterAttempt: attempt)
                    // A shutdown ends the wait; the event is handled again by whoever runs the trigger next.
                    try await cancelWhenGracefulShutdown { try await Task.sleep(for: backoff) }
                    attempt += 1
                }
            }
        }

        /// Whether a handler's error would come back on a retry: a ``SyncError`` of the engine
        /// refusing the handler's own operations, which depends on the data alone. The database
        /// being unavailable, an internal error and everything else are retried.
        static func isPermanent(_ error: any Error) -> Bool {
            guard let error = error as? SyncError else { return false }
            return error.code != .internal && error.code != .unavailable
        }

        private func deadLetter(_ event: ChangeEvent, attempts: Int, error: TriggerError, concurrent: Bool) async throws {
            let ledger = self.ledger
            let name = self.name
            let holder = service.instance
            let target = concurrent ? position : event.position
            let start = concurrent ? nil : position
            let store = service.store
            try await service.bounded("dead-lettering event \(event.position) of trigger \(name)") {
                try await store.withWriteTransaction(author: "trigger:\(name)") { transaction in
                    if concurrent {
                        guard try await ledger.markDone(name, position: event.position, on: transaction.connection) else { return }
                    }
                    try await ledger.deadLetter(name, position: event.position, attempts: attempts, error: error.description, on: transaction.connection)
                    guard try await ledger.advance(name, holder: holder, to: target, from: start, on: transaction.connection) else {
                        throw TriggerError(.leaseLost, "the lease expired, or the position moved (a commit whose answer was lost)")
                    }
                }
            }
            service.metrics.deadLettered(name)
            service.logger.error("event dead-lettered", metadata: ["trigger": "\(name)", "event": "\(event.position)", "error": "\(error)"])
        }
    }
}
