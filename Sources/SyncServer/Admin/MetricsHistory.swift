import Foundation
import Locking
import ServiceLifecycle
import SyncProtocol
import SyncStorage

/// The last minutes of this instance's counts, for the console's charts: a sample of
/// ``ServerMetrics/snapshot`` every `interval`, the newest `capacity` kept (90 × 10 s: 15
/// minutes). Memory is fixed; nothing is written to the database.
final class MetricsHistory: Service, Sendable {
    struct Sample: Sendable, Hashable {
        var at: Date
        var counts: MetricsSnapshot
    }

    let metrics: ServerMetrics
    let interval: Duration
    let capacity: Int
    let time: SyncClock
    private let samples = Locked<[Sample]>([])

    init(metrics: ServerMetrics, interval: Duration = .seconds(10), capacity: Int = 90, time: SyncClock) {
        self.metrics = metrics
        self.interval = interval
        self.capacity = capacity
        self.time = time
    }

    /// The samples, oldest first, and one taken now.
    var recent: [Sample] {
        samples.withLock { $0 } + [Sample(at: time.now(), counts: metrics.snapshot)]
    }

    /// Takes a sample, dropping the oldest beyond the capacity.
    func record() {
        let sample = Sample(at: time.now(), counts: metrics.snapshot)
        samples.withLock { samples in
            samples.append(sample)
            if samples.count > capacity { samples.removeFirst(samples.count - capacity) }
        }
    }

    func run() async {
        await Periodic(every: interval, time: time).run { record() }
    }
}
