import CoreMetrics
import Metrics
import NIOCore
import Prometheus
import Synchronization

/// The server's metrics, kept in a Prometheus registry of its own (so several servers in one
/// process each report their own) and rendered by `GET /metrics`.
public final class ServerMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    let factory: PrometheusMetricsFactory

    let sessions: CoreMetrics.Meter
    let subscriptions: CoreMetrics.Meter
    let uploadDuration: CoreMetrics.Timer
    let changesPushed: CoreMetrics.Counter
    private let uploadCounters: Mutex<[String: CoreMetrics.Counter]> = Mutex([:])
    private let errorCounters: Mutex<[String: CoreMetrics.Counter]> = Mutex([:])

    public init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(20),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(5),
        ]
        self.factory = factory
        sessions = CoreMetrics.Meter(label: "psync_sessions", factory: factory)
        subscriptions = CoreMetrics.Meter(label: "psync_subscriptions", factory: factory)
        uploadDuration = CoreMetrics.Timer(label: "psync_upload_duration_seconds", factory: factory)
        changesPushed = CoreMetrics.Counter(label: "psync_changes_pushed_total", factory: factory)
    }

    /// Counts an upload by outcome: `ack`, `rejected` or `error`.
    func countUpload(_ outcome: String) {
        counter(in: uploadCounters, label: "psync_uploads_total", key: outcome, dimension: "outcome").increment()
    }

    /// Counts an error answered to a client, by code.
    func countError(_ code: String) {
        counter(in: errorCounters, label: "psync_errors_total", key: code, dimension: "code").increment()
    }

    private func counter(in table: borrowing Mutex<[String: CoreMetrics.Counter]>, label: String, key: String, dimension: String) -> CoreMetrics.Counter {
        table.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = CoreMetrics.Counter(label: label, dimensions: [(dimension, key)], factory: factory)
            counters[key] = counter
            return counter
        }
    }

    /// The Prometheus text format.
    public func render() -> String {
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}
