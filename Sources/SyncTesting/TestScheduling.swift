import Foundation
import SyncStorage

/// Lets a test run alone: tests whose assertions involve time (a deadline, a latency) or that
/// load the machine heavily take the lock exclusively, every other database test shares it.
/// On two cores, timing assertions running beside a crash test or a 24 MB slow-consumer test
/// would measure the neighbours, not the code.
///
/// At most ``maximumShared`` tests share it at once: swift-testing starts every test of the
/// run together, and when an exclusive test ends, all those that waited behind it would start
/// in the same instant — dozens of databases created and servers started at once, whose own
/// waits (a server to be ready, a message) then time out for want of the machine, not for a
/// fault of the code.
actor TestScheduling {
    static let shared = TestScheduling()

    /// The most database tests that run at once (`PSYNC_TEST_PARALLELISM`, default 8).
    static let maximumShared = ProcessInfo.processInfo.environment["PSYNC_TEST_PARALLELISM"].flatMap(Int.init).map { max(1, $0) } ?? 8

    @TaskLocal static var holding = false

    /// Keeps the tests' time limits apart from the deadlines of the code under test, which
    /// tests count (`DeadlineTicker.shared`).
    private static let ticker = DeadlineTicker(resolution: .seconds(1))

    private var readers = 0
    private var writer = false
    private var waiting: [(exclusive: Bool, continuation: CheckedContinuation<Void, Never>)] = []

    /// Runs `body` holding the lock, exclusively or shared; nested calls run directly.
    ///
    /// `limit` bounds the time `body` runs once it holds the lock: a test's own time limit
    /// (swift-testing's) also counts the time it queued behind exclusive tests, which grows with
    /// the suite, so it only backs this one up (the suites set 30 minutes: with the freeze and
    /// shared-cluster trials, a 5-minute limit was reached in the queue alone). A body still running at its limit is cancelled
    /// and left behind: the test fails with ``TestTimeout`` and gives the lock back, so one test
    /// stuck in a call that ignores cancellation cannot hold up every test queued behind it.
    static func run<Result: Sendable>(
        exclusive: Bool, limit: Duration, _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        if holding { return try await body() }
        await shared.acquire(exclusive: exclusive)
        do {
            let result = try await bounded(by: limit) { try await $holding.withValue(true) { try await body() } }
            await shared.release(exclusive: exclusive)
            return result
        } catch {
            await shared.release(exclusive: exclusive)
            throw error
        }
    }

    /// The result of `body`, or ``TestTimeout`` once `limit` has passed; `body` is then
    /// cancelled but not waited for (``withDeadline(_:_:_:)``).
    private static func bounded<Result: Sendable>(
        by limit: Duration, _ body: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        do {
            return try await withDeadline(limit, "the test", ticker: ticker, body)
        } catch is DeadlineError {
            throw TestTimeout(what: "the test to finish: it held the database for more than \(limit)")
        }
    }

    private func acquire(exclusive: Bool) async {
        // Writers first: a waiting exclusive test is not starved by a stream of shared ones.
        if exclusive ? (!writer && readers == 0) : (!writer && readers < Self.maximumShared && !waiting.contains { $0.exclusive }) {
            if exclusive { writer = true } else { readers += 1 }
            return
        }
        await withCheckedContinuation { continuation in
            waiting.append((exclusive, continuation))
        }
    }

    private func release(exclusive: Bool) {
        if exclusive { writer = false } else { readers -= 1 }
        while let next = waiting.first {
            if next.exclusive {
                guard !writer, readers == 0 else { return }
                waiting.removeFirst()
                writer = true
                next.continuation.resume()
                return
            }
            guard !writer, readers < Self.maximumShared else { return }
            waiting.removeFirst()
            readers += 1
            next.continuation.resume()
        }
    }
}

