import Locking
import SyncStorage
import Testing

/// `withDeadline`: bounded waits that hold even when the work ignores cancellation, their
/// deadlines kept by the shared ticker (no sleeping task per call).
@Suite("Deadlines")
struct DeadlineTests {
    @Test("work that finishes in time returns its result, and leaves no deadline behind")
    func inTime() async throws {
        // A ticker of its own: the tests running beside this one keep deadlines of theirs.
        let ticker = DeadlineTicker(resolution: .milliseconds(100))
        let values = try await withThrowingTaskGroup(of: Int.self) { group in
            for n in 0..<200 {
                group.addTask { try await withDeadline(.seconds(60), "work \(n)", ticker: ticker) { n } }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        #expect(values.sorted() == Array(0..<200))
        #expect(try await waitFor { ticker.pendingCount == 0 })
    }

    @Test("work that never ends is given up at its deadline with DeadlineError")
    func stuck() async throws {
        let ended = Locked(false)
        await #expect(throws: DeadlineError.self) {
            try await withDeadline(.milliseconds(300), "work that ignores cancellation") {
                // Ignores cancellation: a query on a dead connection does.
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    Task.detached {
                        for _ in 0..<40 { try? await Task.sleep(for: .milliseconds(50)) }
                        continuation.resume()
                    }
                }
                ended.withLock { $0 = true }
            }
        }
        #expect(!ended.withLock { $0 }, "the deadline waited for the work")
    }

    @Test("cancelling the caller ends the wait at once, with no deadline at all")
    func cancelled() async throws {
        let task = Task {
            try await withDeadline(nil, "work without a deadline") {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    Task.detached {
                        try? await Task.sleep(for: .seconds(2))
                        continuation.resume()
                    }
                }
            }
        }
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }

    /// Polls `condition` for up to 10 seconds.
    func waitFor(_ condition: @Sendable () -> Bool) async throws -> Bool {
        for _ in 0..<200 where !condition() { try await Task.sleep(for: .milliseconds(50)) }
        return condition()
    }
}
