import Locking

/// Deliveries of numbered messages to many sessions: each delivery's latency, and a message
/// marked complete once every session has it.
final class DeliveryTracker: Sendable {
    let latencies = LatencyRecorder()
    let complete: [Once<Void>]
    private let expected: Int
    private let counts = Locked<[Int: Int]>([:])

    init(messages: Int, sessions: Int) {
        complete = (0..<messages).map { _ in Once<Void>() }
        expected = sessions
    }

    func delivered(_ n: Int, nanoseconds: UInt64) {
        latencies.record(nanoseconds: nanoseconds)
        let count = counts.withLock { counts -> Int in
            counts[n, default: 0] += 1
            return counts[n]!
        }
        if count == expected, complete.indices.contains(n) { complete[n].set(()) }
    }
}
