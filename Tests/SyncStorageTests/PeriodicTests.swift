import Foundation
import Locking
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// `Periodic` on a `MockClock`: when runs happen, measured in mock time, without PostgreSQL.
@Suite("Periodic work on an injected clock")
struct PeriodicTests {
    /// Counts runs and lets the test wait for each, in order.
    final class Runs: Sendable {
        private struct State {
            var count = 0
            var unread: [Int] = []
            var waiter: CheckedContinuation<Int, Never>?
        }

        private let state = Locked(State())
        let count = Counter()

        func ran() {
            let number = count.increment()
            let waiter = state.withLock { state -> CheckedContinuation<Int, Never>? in
                guard let waiter = state.waiter else {
                    state.unread.append(number)
                    return nil
                }
                state.waiter = nil
                return waiter
            }
            waiter?.resume(returning: number)
        }

        /// The number of the next run not yet waited for.
        func next() async -> Int {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Int? in
                    if !state.unread.isEmpty { return state.unread.removeFirst() }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }
    }

    @Test("runs at once, then one interval after each run ends; never before the interval has passed")
    func fixedDelay() async throws {
        let clock = MockClock()
        let runs = Runs()
        let task = Task { await Periodic(every: .seconds(10), time: clock.time).run { runs.ran() } }
        #expect(await runs.next() == 1)
        await clock.sleepers(atLeast: 1)
        clock.advance(by: .seconds(9))
        #expect(runs.count.value == 1)
        #expect(clock.sleeperCount == 1)
        clock.advance(by: .seconds(1))
        #expect(await runs.next() == 2)
        await clock.sleepers(atLeast: 1)
        // A long jump runs once, not once per interval jumped over.
        clock.advance(by: .seconds(100))
        #expect(await runs.next() == 3)
        await clock.sleepers(atLeast: 1)
        #expect(runs.count.value == 3)
        task.cancel()
        await task.value
    }

    @Test("with startsAtOnce false the first run waits one interval")
    func delayedStart() async throws {
        let clock = MockClock()
        let runs = Runs()
        let task = Task { await Periodic(every: .seconds(5), time: clock.time, startsAtOnce: false).run { runs.ran() } }
        await clock.sleepers(atLeast: 1)
        #expect(runs.count.value == 0)
        clock.advance(by: .seconds(5))
        #expect(await runs.next() == 1)
        task.cancel()
        await task.value
    }

    @Test("cancellation ends the wait at once, in mock time that never moves")
    func cancellation() async throws {
        let clock = MockClock()
        let task = Task { await Periodic(every: .seconds(3600), time: clock.time).run {} }
        await clock.sleepers(atLeast: 1)
        task.cancel()
        await task.value
        #expect(clock.sleeperCount == 0)
    }
}

@Suite("MockClock")
struct MockClockTests {
    @Test("sleepers resume once time reaches their deadline, the earliest first")
    func order() async throws {
        let clock = MockClock()
        let woke = Woken()
        let tasks = [3, 1, 2].map { seconds in
            Task {
                try await clock.sleep(for: .seconds(seconds))
                woke.append(seconds)
            }
        }
        await clock.sleepers(atLeast: 3)
        clock.advance(by: .milliseconds(999))
        #expect(clock.sleeperCount == 3)
        clock.advance(by: .seconds(2))
        for task in tasks.dropFirst() { try await task.value }
        #expect(woke.values.sorted() == [1, 2])
        #expect(clock.sleeperCount == 1)
        #expect(clock.advanceToNextDeadline())
        try await tasks[0].value
        #expect(clock.now.offset == .seconds(3))
        #expect(clock.date == clock.epoch.addingTimeInterval(3))
    }

    @Test("a cancelled sleep throws CancellationError and leaves no sleeper behind")
    func cancelled() async throws {
        let clock = MockClock()
        let task = Task { try await clock.sleep(for: .seconds(1)) }
        await clock.sleepers(atLeast: 1)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test("SyncClock's uptime follows the mock clock")
    func uptime() {
        let clock = MockClock()
        let time = clock.time
        #expect(time.uptime() == .zero)
        clock.advance(by: .seconds(42))
        #expect(time.uptime() == .seconds(42))
        #expect(time.now() == clock.epoch.addingTimeInterval(42))
    }
}

/// A count shared by tasks.
final class Counter: Sendable {
    private let storage = Locked(0)

    var value: Int { storage.withLock { $0 } }

    /// Adds one; the new count.
    func increment() -> Int {
        storage.withLock { value in
            value += 1
            return value
        }
    }
}

/// What woke, in order.
final class Woken: Sendable {
    private let storage = Locked<[Int]>([])

    var values: [Int] { storage.withLock { $0 } }

    func append(_ value: Int) { storage.withLock { $0.append(value) } }
}
