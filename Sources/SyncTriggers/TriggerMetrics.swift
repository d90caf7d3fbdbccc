import CoreMetrics
import Locking
import PartitionSync

/// Per-trigger metrics: events handled, failed attempts, dead letters, how far behind the
/// event log the trigger is, and the delay from a change's commit to its handler's commit.
final class TriggerMetrics: Sendable {
    private let factory: any MetricsFactory
    private let instruments = Locked<[String: (handled: Counter, failures: Counter, deadLetters: Counter, lag: Gauge, delay: Timer)]>([:])

    init(factory: any MetricsFactory) {
        self.factory = factory
    }

    private func instruments(_ trigger: String) -> (handled: Counter, failures: Counter, deadLetters: Counter, lag: Gauge, delay: Timer) {
        instruments.withLock { table in
            if let existing = table[trigger] { return existing }
            let dimensions = [("trigger", trigger)]
            let made = (
                Counter(label: "psync_trigger_events_total", dimensions: dimensions, factory: factory),
                Counter(label: "psync_trigger_failures_total", dimensions: dimensions, factory: factory),
                Counter(label: "psync_trigger_dead_letters_total", dimensions: dimensions, factory: factory),
                Gauge(label: "psync_trigger_lag_events", dimensions: dimensions, factory: factory),
                Timer(label: "psync_trigger_delay_seconds", dimensions: dimensions, factory: factory)
            )
            table[trigger] = made
            return made
        }
    }

    func handled(_ trigger: String, delay seconds: Double) {
        let instruments = instruments(trigger)
        instruments.handled.increment()
        instruments.delay.recordNanoseconds(Int64(max(0, seconds) * 1e9))
    }

    func failed(_ trigger: String) { instruments(trigger).failures.increment() }
    func deadLettered(_ trigger: String) { instruments(trigger).deadLetters.increment() }
    func lag(_ trigger: String, events: Int) { instruments(trigger).lag.record(events) }
}
