import Locking
import PartitionSync
import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
@testable import SyncTriggers
import Testing

/// The trigger services' time, driven by the test kit's `MockClock`: the watchdog's verdicts,
/// the periodic loop, the runners' wake-up and the deadline of a step, each in milliseconds.
@Suite("Trigger time", .timeLimit(.minutes(1)))
struct TriggerTimeTests {
    static func configuration(_ clock: MockClock) -> TriggerConfiguration {
        var configuration = TriggerConfiguration()
        configuration.time = clock.time
        return configuration
    }

    @Test("the watchdog reports a runner that stopped beating as stuck, and a trigger nobody leases as no_lease")
    func stuckAndLeaseless() {
        let clock = MockClock()
        let configuration = Self.configuration(clock)
        let health = TriggerHealth(names: ["alive", "hung"], configuration: configuration, stopwatch: Stopwatch(clock))
        health.beat("alive")
        health.beat("hung")
        health.observed("alive", lag: 0, leaseHolder: "me")
        health.observed("hung", lag: 0, leaseHolder: nil)
        health.checked()
        #expect(health.isHealthy)
        // Twice the operation timeout passes; only `alive` beats and the ledger is read again.
        clock.advance(by: configuration.operationTimeout)
        health.beat("alive")
        health.observed("hung", lag: 0, leaseHolder: nil)
        health.checked()
        clock.advance(by: configuration.operationTimeout + .seconds(1))
        let problems = Dictionary(uniqueKeysWithValues: health.reports.map { ($0.name, $0.problems) })
        #expect(problems["alive"] == [])
        #expect(problems["hung"] == [.stuck, .noLease])
        #expect(!health.isHealthy)
    }

    @Test("the watchdog says unknown once it has not read the ledger for a while, and a lag over the maximum is behind")
    func unknownAndBehind() {
        let clock = MockClock()
        let configuration = Self.configuration(clock)
        let health = TriggerHealth(names: ["t"], configuration: configuration, stopwatch: Stopwatch(clock))
        health.beat("t")
        health.observed("t", lag: configuration.maximumLag + 1, leaseHolder: "me")
        health.checked()
        #expect(health.reports.first?.problems == [.behind])
        clock.advance(by: configuration.operationTimeout + configuration.pollInterval * 3 + .seconds(1))
        health.beat("t")
        #expect(health.reports.first?.problems == [.behind, .unknown])
    }

    @Test("a runner's wait ends when it is woken, or at its timeout on the injected clock")
    func wakeSignal() async {
        let clock = MockClock()
        let signal = WakeSignal(time: clock.time)
        // Woken before it waits: the wait returns at once.
        signal.signal()
        await signal.wait(timeout: .seconds(3600))
        let waiting = Task { await signal.wait(timeout: .seconds(1)) }
        await clock.sleepers(atLeast: 1)
        clock.advance(by: .seconds(1))
        await waiting.value
        let woken = Task { await signal.wait(timeout: .seconds(3600)) }
        await clock.sleepers(atLeast: 1)
        signal.signal()
        await woken.value
    }

    @Test("a step that never ends is abandoned at the operation timeout of the injected clock")
    func deadline() async throws {
        let clock = MockClock()
        let ticker = DeadlineTicker(resolution: .milliseconds(100), time: clock.time)
        let step = Task {
            try await withDeadline(.seconds(60), "a step that hangs", ticker: ticker) {
                try await clock.sleep(for: .seconds(3600))
            }
        }
        // The step and the ticker wait.
        await clock.sleepers(atLeast: 2)
        clock.advance(by: .seconds(59))
        await clock.sleepers(atLeast: 2)
        #expect(ticker.pendingCount == 1)
        clock.advance(by: .seconds(1))
        await #expect(throws: DeadlineError.self) { try await step.value }
    }
}

/// A renewable deadline (a handler's run committing parts: each part renews it), on the
/// injected clock.
@Suite("Renewable deadlines", .timeLimit(.minutes(1)))
struct RenewableDeadlineTests {
    @Test("a renewed step is given its whole timeout again from the renewal: alive past its first deadline, abandoned a timeout after the last renewal")
    func renewed() async throws {
        let clock = MockClock()
        let ticker = DeadlineTicker(resolution: .milliseconds(100), time: clock.time)
        let renewals = Locked<DeadlineRenewal?>(nil)
        let step = Task {
            try await withDeadline(.seconds(60), "a run of parts", ticker: ticker, renewable: { renewal in
                renewals.withLock { $0 = renewal }
                try await clock.sleep(for: .seconds(3600))
            })
        }
        // The step and the ticker wait; at 50 s the step renews: its deadline is now 110 s.
        await clock.sleepers(atLeast: 2)
        clock.advance(by: .seconds(50))
        await clock.sleepers(atLeast: 2)
        try #require(renewals.withLock { $0 }).renew()
        #expect(ticker.pendingCount == 1)
        // At 100 s, past the first deadline: once the ticker has looked (and slept again, or
        // stopped with no deadline left), the step still sleeps (a deadline that fired would
        // have cancelled its sleep at once) and its renewed deadline is pending.
        let looked = clock.sleepsStarted
        clock.advance(by: .seconds(50))
        while clock.sleepsStarted == looked && ticker.pendingCount > 0 { await Task.yield() }
        #expect(clock.sleeperCount == 2 && ticker.pendingCount == 1, "the step was abandoned at its first deadline")
        clock.advance(by: .seconds(10))
        await #expect(throws: DeadlineError.self) { try await step.value }
    }
}

/// The trigger services' waits at a graceful shutdown, on a `MockClock` that never moves. On a
/// database: the suite's time limit counts the time queued behind exclusive tests (which grew
/// past 5 minutes in a loaded CI run), so it is the 30 minutes of the other database suites;
/// what bounds the test itself is `TestDatabase.with`'s limit once it has its database (120 s),
/// far shorter than the poll interval a wait that ignored the shutdown would sit out.
@Suite("Trigger shutdown", .timeLimit(.minutes(30)))
struct TriggerShutdownTests {
    @Test("a graceful shutdown ends a runner's wait for events at once, not at its poll interval")
    func shutdownEndsTheWait() async throws {
        try await TestDatabase.with { db in
            let clock = MockClock()
            var configuration = TestTriggers.fastConfiguration
            configuration.time = clock.time
            // Waits no test would sit out: the clock never moves in this test.
            configuration.pollInterval = .seconds(3600)
            configuration.leaseRenewal = .seconds(3600)
            configuration.leaseDuration = .seconds(7200)
            let service = TestTriggers.service(db.store(), [Trigger(name: "idle") { _, _ in }], configuration: configuration)
            try await TestTriggers.running([service]) { () async throws in
                // Once it holds its lease, the runner reads no events and waits for a wake-up.
                let leased: @Sendable () async throws -> Bool = {
                    var held = false
                    let rows = try await db.client.query("SELECT lease_holder IS NOT NULL FROM psync_triggers WHERE name = 'idle'", logger: db.logger)
                    for try await value in rows.decode(Bool.self) { held = value }
                    return held
                }
                #expect(try await TestTriggers.eventually(leased))
                // The interest watcher, the watchdog, the sequencer and the runner wait on the clock.
                await clock.sleepers(atLeast: 4)
            }
            // Returned without the clock moving: the runner's wait ended with the shutdown
            // (before, it lasted the poll interval: this test ran into its time limit).
        }
    }
}
