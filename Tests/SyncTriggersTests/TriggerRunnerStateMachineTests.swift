import Foundation
import PartitionSync
import SyncProtocol
import SyncStorage
import SyncTesting
@testable import SyncTriggers
import Testing

/// The runner's policy without a database: each test feeds the state machine the answers a
/// database would give and checks the actions it asks for. Time is a number passed in.
@Suite("Trigger runner state machine")
struct TriggerRunnerStateMachineTests {
    typealias Machine = TriggerRunnerStateMachine
    typealias Action = TriggerRunnerStateMachine.Action

    static let configuration: TriggerConfiguration = {
        var configuration = TriggerConfiguration()
        configuration.leaseRenewal = .seconds(1)
        configuration.pollInterval = .seconds(1)
        configuration.batchSize = 10
        configuration.eventsPerTransaction = 3
        configuration.maximumDepth = 4
        return configuration
    }()

    static func message(_ position: Int64, depth: Int = 0, poison: Bool = false) -> ChangeEvent {
        ChangeEvent(
            position: position, kind: .object, operation: .insert, key: try! ObjectKey(collection: "Message", id: "m\(position)"),
            partition: try! Partition("room=r"), after: poison ? ["poison": true] : [:], author: "u", depth: depth,
            created: Date(timeIntervalSince1970: 0))
    }

    static func other(_ position: Int64) -> ChangeEvent {
        ChangeEvent(
            position: position, kind: .object, operation: .insert, key: try! ObjectKey(collection: "Other", id: "o\(position)"),
            partition: try! Partition("room=r"), author: "u", created: Date(timeIntervalSince1970: 0))
    }

    static func machine(
        mode: Trigger.Mode = .ordered, retry: Trigger.RetryPolicy = .init(attempts: 3, initialBackoff: .milliseconds(100)),
        configuration: TriggerConfiguration = configuration
    ) -> Machine {
        let trigger = Trigger(name: "count", collections: ["Message"], mode: mode, retry: retry) { _, _ in }
        return Machine(policy: .init(trigger: trigger, configuration: configuration))
    }

    /// Registers and takes the lease at `position`; the machine then asks to read.
    static func holding(_ machine: inout Machine, at position: Int64, now: Duration = .zero) {
        #expect(machine.start() == .register)
        #expect(machine.registered(now: now) == .acquireLease(passed: nil))
        #expect(machine.leaseAnswered(position: position, now: now) == .read(after: position))
    }

    @Test("registers, takes the lease at the stored position, reads, and waits for a wake-up when nothing is new")
    func startAndIdle() {
        var machine = Self.machine()
        Self.holding(&machine, at: 7)
        #expect(machine.holding)
        #expect(machine.read([], through: 7, full: false, now: .zero) == .waitForWake(timeout: .seconds(1)))
        // Woken before the lease is due: reads again without renewing.
        #expect(machine.waited(now: .milliseconds(300)) == .read(after: 7))
        // Events it does not handle were scanned: passed over in memory, stored with the next renewal.
        #expect(machine.read([], through: 12, full: false, now: .milliseconds(400)) == .read(after: 12))
        #expect(machine.read([], through: 12, full: false, now: .milliseconds(500)) == .waitForWake(timeout: .seconds(1)))
        #expect(machine.waited(now: .milliseconds(1500)) == .acquireLease(passed: 12))
    }

    @Test("a run of matching events is handled together, up to eventsPerTransaction, each run fenced from where it starts")
    func runsTogether() {
        var machine = Self.machine()
        Self.holding(&machine, at: 0)
        let events = (1...5).map { Self.message(Int64($0)) }
        #expect(machine.read(events, through: 6, full: false, now: .zero) == .runTogether(Array(events[0..<3]), from: 0))
        #expect(machine.ranTogether(taken: 3, now: .zero) == .runTogether(Array(events[3..<5]), from: 3))
        // The transaction reached its change budget after the first: the second goes in the next run.
        #expect(machine.ranTogether(taken: 1, now: .zero) == .runOne(events[4], from: 4, attempt: 1))
        #expect(machine.handled(now: .zero) == .read(after: 6))
        #expect(machine.position == 6)
    }

    @Test("a run that fails together is split: each event alone, so one poison event is isolated and the others commit")
    func splitIsolatesPoison() {
        var machine = Self.machine(retry: .init(attempts: 1))
        Self.holding(&machine, at: 0)
        let events = [Self.message(1), Self.other(2), Self.message(3, poison: true), Self.message(4)]
        #expect(machine.read(events, through: 4, full: false, now: .zero) == .runTogether(Array(events[0..<4]), from: 0))
        #expect(machine.failed(.failed("poisoned", permanent: false), now: .zero) == .runOne(events[0], from: 0, attempt: 1))
        #expect(machine.handled(now: .zero) == .runOne(events[2], from: 1, attempt: 1))
        let failed = machine.failed(.failed("poisoned", permanent: false), now: .zero)
        #expect(failed == .deadLetter(events[2], attempts: 1, error: TriggerError(.handlerFailed, "poisoned"), from: 1))
        #expect(machine.handled(now: .zero) == .runOne(events[3], from: 3, attempt: 1))
        #expect(machine.handled(now: .zero) == .read(after: 4))
    }

    @Test("a failing event is retried with doubling backoff, up to the maximum, then dead-lettered after its last attempt")
    func retryScheduleAndDeadLetter() {
        var machine = Self.machine(retry: .init(attempts: 5, initialBackoff: .milliseconds(100), maximumBackoff: .milliseconds(300)))
        Self.holding(&machine, at: 0)
        let event = Self.message(1)
        #expect(machine.read([event], through: 1, full: false, now: .zero) == .runOne(event, from: 0, attempt: 1))
        var backoffs: [Duration] = []
        for attempt in 1...4 {
            guard case .sleep(let backoff) = machine.failed(.failed("no", permanent: false), now: .zero) else {
                Issue.record("attempt \(attempt) was not followed by a backoff")
                return
            }
            backoffs.append(backoff)
            #expect(machine.waited(now: .zero) == .runOne(event, from: 0, attempt: attempt + 1))
        }
        #expect(backoffs == [.milliseconds(100), .milliseconds(200), .milliseconds(300), .milliseconds(300)])
        #expect(machine.failed(.failed("no", permanent: false), now: .zero)
            == .deadLetter(event, attempts: 5, error: TriggerError(.handlerFailed, "no"), from: 0))
        #expect(machine.handled(now: .zero) == .read(after: 1))
    }

    @Test("a permanent failure is dead-lettered at its first attempt; an event too deep without any")
    func permanentAndTooDeep() {
        var machine = Self.machine()
        Self.holding(&machine, at: 0)
        let refused = Self.message(1)
        let deep = Self.message(2, depth: 4)
        let next = Self.message(3)
        // The deep event ends the run before it and goes alone.
        #expect(machine.read([refused, deep, next], through: 3, full: false, now: .zero) == .runOne(refused, from: 0, attempt: 1))
        #expect(machine.failed(.failed("type_mismatch", permanent: true), now: .zero)
            == .deadLetter(refused, attempts: 1, error: TriggerError(.handlerFailed, "type_mismatch"), from: 0))
        guard case .deadLetter(let event, attempts: 0, let error, from: 1) = machine.handled(now: .zero) else {
            Issue.record("the deep event was not dead-lettered")
            return
        }
        #expect(event == deep)
        #expect(error.code == .depthExceeded)
        #expect(machine.handled(now: .zero) == .runOne(next, from: 2, attempt: 1))
    }

    @Test("the lease lost mid-batch: the rest of the batch is dropped, the lease taken again, and reading resumes from the stored position")
    func leaseLostMidBatch() {
        var machine = Self.machine()
        Self.holding(&machine, at: 0)
        let events = (1...6).map { Self.message(Int64($0)) }
        #expect(machine.read(events, through: 6, full: false, now: .zero) == .runTogether(Array(events[0..<3]), from: 0))
        #expect(machine.ranTogether(taken: 3, now: .milliseconds(100)) == .runTogether(Array(events[3..<6]), from: 3))
        // The fenced advance found the lease gone: nothing of the run committed.
        #expect(machine.failed(.leaseLost, now: .milliseconds(200)) == .acquireLease(passed: nil))
        #expect(!machine.holding)
        // Another instance holds it now.
        #expect(machine.leaseAnswered(position: nil, now: .milliseconds(200)) == .waitForWake(timeout: .seconds(1)))
        #expect(machine.waited(now: .milliseconds(1200)) == .acquireLease(passed: nil))
        // Taken back later: the other instance had handled up to 5; this one goes on from there.
        #expect(machine.leaseAnswered(position: 5, now: .milliseconds(1200)) == .read(after: 5))
        #expect(machine.position == 5)
    }

    @Test("the lease is renewed between runs when due, storing the position passed; a refused renewal ends the batch")
    func renewalBetweenRuns() {
        var machine = Self.machine()
        Self.holding(&machine, at: 0)
        let events = (1...4).map { Self.message(Int64($0)) }
        #expect(machine.read(events, through: 9, full: false, now: .zero) == .runTogether(Array(events[0..<3]), from: 0))
        #expect(machine.ranTogether(taken: 3, now: .seconds(1)) == .acquireLease(passed: 3))
        #expect(machine.leaseAnswered(position: 3, now: .seconds(1)) == .runOne(events[3], from: 3, attempt: 1))
        #expect(machine.handled(now: .seconds(2)) == .acquireLease(passed: 9))
        #expect(machine.leaseAnswered(position: nil, now: .seconds(2)) == .waitForWake(timeout: .seconds(1)))
        #expect(!machine.holding)
    }

    @Test("a lost commit answer or an unreachable database: the position is taken from the store after a pause, no attempt used up")
    func unavailable() {
        var machine = Self.machine()
        Self.holding(&machine, at: 0)
        let event = Self.message(1)
        #expect(machine.read([event], through: 1, full: false, now: .zero) == .runOne(event, from: 0, attempt: 1))
        #expect(machine.failed(.unavailable("connection reset"), now: .zero) == .sleep(.seconds(1)))
        // The transaction had committed: the renewal finds the stored position past the event.
        #expect(machine.waited(now: .seconds(1)) == .acquireLease(passed: 0))
        #expect(machine.leaseAnswered(position: 1, now: .seconds(1)) == .read(after: 1))
    }

    @Test("after a failover that lost commits, a renewal on the new timeline goes back to the stored position and drops the batch it was handling")
    func historyChangedUnderTheLease() {
        var machine = Self.machine()
        Self.holding(&machine, at: 0)
        // Events 1-4 read from the old primary; 1-3 handled together there (and lost with its
        // tail), and the passes up to 9 kept in memory only.
        let events = (1...4).map { Self.message(Int64($0)) }
        #expect(machine.read(events, through: 9, full: false, now: .zero) == .runTogether(Array(events[0..<3]), from: 0))
        #expect(machine.ranTogether(taken: 3, now: .seconds(1)) == .acquireLease(passed: 3))
        // The new primary stored position 0 and numbers its own events 1, 2, ...: event 4 of the
        // old history is not handled, and the next read starts at the stored position.
        #expect(machine.leaseAnswered(position: 0, continued: false, now: .seconds(1)) == .read(after: 0))
        #expect(machine.position == 0)
        // On the same timeline, a renewal keeps the larger of the two (a commit whose answer was lost).
        #expect(machine.read([], through: 6, full: false, now: .seconds(1)) == .read(after: 6))
        #expect(machine.read([], through: 6, full: false, now: .seconds(1)) == .waitForWake(timeout: .seconds(1)))
        #expect(machine.waited(now: .seconds(2)) == .acquireLease(passed: 6))
        #expect(machine.leaseAnswered(position: 4, continued: true, now: .seconds(2)) == .read(after: 6))
    }

    @Test("a trigger that gathers waits between runs unless behind")
    func gathering() {
        let trigger = Trigger(name: "fold", collections: ["Message"], gathering: .seconds(5)) { _, _ in }
        var machine = Machine(policy: .init(trigger: trigger, configuration: Self.configuration))
        Self.holding(&machine, at: 0)
        let events = (1...2).map { Self.message(Int64($0)) }
        #expect(machine.read(events, through: 2, full: false, now: .zero) == .runTogether(events, from: 0))
        #expect(machine.ranTogether(taken: 2, now: .milliseconds(100)) == .sleep(.milliseconds(4900)))
        #expect(machine.waited(now: .seconds(5)) == .acquireLease(passed: 2))
        // A full read (its events or bytes at the limit): behind, the next run starts at once.
        #expect(machine.leaseAnswered(position: 2, now: .seconds(5)) == .read(after: 2))
        let more = (3...4).map { Self.message(Int64($0)) }
        #expect(machine.read(more, through: 4, full: true, now: .seconds(5)) == .runTogether(more, from: 2))
        #expect(machine.ranTogether(taken: 2, now: .seconds(5) + .milliseconds(100)) == .read(after: 4))
    }

    @Test("a concurrent trigger handles a batch at once, then advances past it")
    func concurrentBatch() {
        var machine = Self.machine(mode: .concurrent(maximum: 4))
        Self.holding(&machine, at: 0)
        let events = [Self.message(1), Self.other(2), Self.message(3)]
        #expect(machine.read(events, through: 5, full: false, now: .zero) == .runConcurrently([events[0], events[2]], from: 0))
        #expect(machine.handled(now: .zero) == .advance(to: 3))
        #expect(machine.handled(now: .zero) == .read(after: 5))
        #expect(machine.stop() == .releaseLease)
    }

    @Test("registering retries after a pause; stopping without the lease just stops")
    func registerAndStop() {
        var machine = Self.machine()
        #expect(machine.start() == .register)
        #expect(machine.failed(.unavailable("down"), now: .zero) == .sleep(.seconds(1)))
        #expect(machine.waited(now: .seconds(1)) == .register)
        #expect(machine.stop() == .stop)
    }

    @Test("errors are told apart for the state machine: a lost lease, the database unavailable, a refusal that would come back, and what a retry may cure")
    func classification() {
        #expect(TriggerRunner.failure(TriggerError(.leaseLost, "gone")) == .leaseLost)
        #expect(TriggerRunner.failure(SyncError(.typeMismatch, "not an object")) == .failed("type_mismatch: not an object", permanent: true))
        guard case .failed(_, permanent: false) = TriggerRunner.failure(SyncError(.internal, "bug")) else {
            Issue.record("an internal error was not retried")
            return
        }
        // A step past its deadline: the database did not answer, which uses up no attempt.
        guard case .unavailable = TriggerRunner.failure(DeadlineError("a step", timeout: .seconds(60))) else {
            Issue.record("a step past its deadline was taken for the handler's failure")
            return
        }
    }
}
