import Synchronization

/// The server's anonymous memory at its highest from its start until ``stop()``, sampled every
/// 20 ms: a figure taken after the work would miss a peak freed before it.
final class MemoryPeak: Sendable {
    private final class Highest: Sendable {
        let bytes: Mutex<Int>
        init(_ bytes: Int) { self.bytes = Mutex(bytes) }
    }

    private let environment: BenchEnvironment
    private let highest: Highest
    private let sampler: Task<Void, Never>

    init(_ environment: BenchEnvironment) {
        let highest = Highest(environment.serverAnonymousRSS())
        self.environment = environment
        self.highest = highest
        sampler = Task {
            while !Task.isCancelled {
                let now = environment.serverAnonymousRSS()
                highest.bytes.withLock { $0 = max($0, now) }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
    }

    /// Stops sampling; the highest figure seen, in bytes (a last sample included).
    func stop() -> Int {
        sampler.cancel()
        let now = environment.serverAnonymousRSS()
        return highest.bytes.withLock { max($0, now) }
    }
}
