/// Lets a test run alone: tests whose assertions involve time (a deadline, a latency) or that
/// load the machine heavily take the lock exclusively, every other database test shares it.
/// On two cores, timing assertions running beside a crash test or a 24 MB slow-consumer test
/// would measure the neighbours, not the code.
actor TestScheduling {
    static let shared = TestScheduling()

    @TaskLocal static var holding = false

    private var readers = 0
    private var writer = false
    private var waiting: [(exclusive: Bool, continuation: CheckedContinuation<Void, Never>)] = []

    /// Runs `body` holding the lock, exclusively or shared; nested calls run directly.
    static func run<Result: Sendable>(exclusive: Bool, _ body: @Sendable () async throws -> Result) async throws -> Result {
        if holding { return try await body() }
        await shared.acquire(exclusive: exclusive)
        do {
            let result = try await $holding.withValue(true) { try await body() }
            await shared.release(exclusive: exclusive)
            return result
        } catch {
            await shared.release(exclusive: exclusive)
            throw error
        }
    }

    private func acquire(exclusive: Bool) async {
        // Writers first: a waiting exclusive test is not starved by a stream of shared ones.
        if exclusive ? (!writer && readers == 0) : (!writer && !waiting.contains { $0.exclusive }) {
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
            guard !writer else { return }
            waiting.removeFirst()
            readers += 1
            next.continuation.resume()
        }
    }
}
