import CoreMetrics
import Locking
import Metrics
import NIOCore
import PartitionSync
import Prometheus
import Synchronization

/// The server's metrics, kept in a Prometheus registry of its own (so several servers in one
/// process each report their own) and rendered by `GET /metrics`.
package final class ServerMetrics: Sendable {
    package let registry: PrometheusCollectorRegistry
    /// The factory of this server's registry, for components that report their own metrics.
    package let factory: PrometheusMetricsFactory

    private let sessions: CoreMetrics.Meter
    private let subscriptions: CoreMetrics.Meter
    let uploadDuration: CoreMetrics.Timer
    private let changesPushed: CoreMetrics.Counter
    /// What the console charts (``snapshot``), counted beside the Prometheus metrics, which
    /// cannot be read back.
    private let openSessions = Atomic(0)
    private let openSubscriptions = Atomic(0)
    private let uploadsCounted = Atomic(0)
    private let changesCounted = Atomic(0)
    private let errorsByCode = Locked<[String: Int]>([:])
    let feedReads: Tally
    let localDeliveries: Tally
    let subscriptionPauses: Tally
    let queuePeakGauge: CoreMetrics.Gauge
    private let queuePeak = Locked(0)
    /// Sizes read when `/metrics` is rendered (see ``sampleSizes(_:)``).
    private let hubFeeds: CoreMetrics.Gauge
    private let hubMembers: CoreMetrics.Gauge
    private let hubWatchers: CoreMetrics.Gauge
    private let sizes = Locked<(@Sendable () -> (feeds: Int, members: Int, watchers: Int))?>(nil)
    private let uploadCounters: Locked<[String: CoreMetrics.Counter]> = Locked([:])
    private let errorCounters: Locked<[String: CoreMetrics.Counter]> = Locked([:])
    private let blobUploadCounters: Locked<[String: CoreMetrics.Counter]> = Locked([:])
    let blobBytesUploaded: CoreMetrics.Counter
    let blobBytesDownloaded: CoreMetrics.Counter
    let objectsExpired: CoreMetrics.Counter
    let blobsCollected: CoreMetrics.Counter

    package init() {
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
        feedReads = Tally(CoreMetrics.Counter(label: "psync_feed_reads_total", factory: factory))
        localDeliveries = Tally(CoreMetrics.Counter(label: "psync_feed_local_deliveries_total", factory: factory))
        subscriptionPauses = Tally(CoreMetrics.Counter(label: "psync_subscription_pauses_total", factory: factory))
        queuePeakGauge = CoreMetrics.Gauge(label: "psync_session_queue_peak_bytes", factory: factory)
        hubFeeds = CoreMetrics.Gauge(label: "psync_hub_feeds", factory: factory)
        hubMembers = CoreMetrics.Gauge(label: "psync_hub_feed_members", factory: factory)
        hubWatchers = CoreMetrics.Gauge(label: "psync_hub_watched_inputs", factory: factory)
        blobBytesUploaded = CoreMetrics.Counter(label: "psync_blob_bytes_uploaded_total", factory: factory)
        blobBytesDownloaded = CoreMetrics.Counter(label: "psync_blob_bytes_downloaded_total", factory: factory)
        objectsExpired = CoreMetrics.Counter(label: "psync_objects_expired_total", factory: factory)
        blobsCollected = CoreMetrics.Counter(label: "psync_blobs_collected_total", factory: factory)
    }

    /// Where the subscription hub's sizes are read when the metrics are rendered: live feeds,
    /// their members, and watched permission inputs. After a load they return to their
    /// baseline (a soak run checks it).
    func sampleSizes(_ sample: @escaping @Sendable () -> (feeds: Int, members: Int, watchers: Int)) {
        sizes.withLock { $0 = sample }
    }

    /// Records the change bytes queued for one session, keeping the largest seen.
    func observeQueue(bytes: Int) {
        let peak = queuePeak.withLock { peak -> Int? in
            guard bytes > peak else { return nil }
            peak = bytes
            return bytes
        }
        if let peak { queuePeakGauge.record(peak) }
    }

    /// How many times live feeds read a partition (all feeds together).
    package var feedReadCount: Int { feedReads.total }

    /// How many commits of this instance live feeds delivered from memory, without a read.
    package var localDeliveryCount: Int { localDeliveries.total }

    /// How many times a live subscription was paused because its session's queue was full.
    package var subscriptionPauseCount: Int { subscriptionPauses.total }

    /// The most change bytes ever queued for one session.
    package var sessionQueuePeakBytes: Int { queuePeak.withLock { $0 } }

    /// Counts an upload by outcome: `ack`, `rejected` or `error`.
    func countUpload(_ outcome: String) {
        uploadsCounted.add(1, ordering: .relaxed)
        counter(in: uploadCounters, label: "psync_uploads_total", key: outcome, dimension: "outcome").increment()
    }

    func sessionOpened() {
        openSessions.add(1, ordering: .relaxed)
        sessions.increment()
    }

    func sessionClosed() {
        openSessions.subtract(1, ordering: .relaxed)
        sessions.decrement()
    }

    func subscriptionAdded() {
        openSubscriptions.add(1, ordering: .relaxed)
        subscriptions.increment()
    }

    func subscriptionRemoved() {
        openSubscriptions.subtract(1, ordering: .relaxed)
        subscriptions.decrement()
    }

    /// Counts objects sent to subscribers.
    func pushed(_ objects: Int) {
        changesCounted.add(objects, ordering: .relaxed)
        changesPushed.increment(by: objects)
    }

    /// The counts the console charts, now.
    package var snapshot: MetricsSnapshot {
        MetricsSnapshot(
            sessions: openSessions.load(ordering: .relaxed), subscriptions: openSubscriptions.load(ordering: .relaxed),
            uploads: uploadsCounted.load(ordering: .relaxed), changesPushed: changesCounted.load(ordering: .relaxed),
            errors: errorsByCode.withLock { $0 })
    }

    /// Counts a blob upload by outcome (`stored`, `existing`) and its bytes.
    func countBlobUpload(_ outcome: String, bytes: Int64) {
        counter(in: blobUploadCounters, label: "psync_blob_uploads_total", key: outcome, dimension: "outcome").increment()
        blobBytesUploaded.increment(by: Int(bytes))
    }

    /// Counts the bytes of a blob download sent whole.
    func countBlobDownload(bytes: Int64) {
        blobBytesDownloaded.increment(by: Int(bytes))
    }

    /// Counts an error answered to a client, by code.
    func countError(_ code: String) {
        errorsByCode.withLock { $0[code, default: 0] += 1 }
        counter(in: errorCounters, label: "psync_errors_total", key: code, dimension: "code").increment()
    }

    private func counter(in table: borrowing Locked<[String: CoreMetrics.Counter]>, label: String, key: String, dimension: String) -> CoreMetrics.Counter {
        table.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = CoreMetrics.Counter(label: label, dimensions: [(dimension, key)], factory: factory)
            counters[key] = counter
            return counter
        }
    }

    /// The Prometheus text format.
    package func render() -> String {
        if let sample = sizes.withLock({ $0 }) {
            let (feeds, members, watchers) = sample()
            hubFeeds.record(feeds)
            hubMembers.record(members)
            hubWatchers.record(watchers)
        }
        var buffer: [UInt8] = []
        registry.emit(into: &buffer)
        return String(decoding: buffer, as: UTF8.self)
    }
}

/// A counter that also keeps its total in memory, for tests and diagnostics.
final class Tally: Sendable {
    private let counter: CoreMetrics.Counter
    private let count = Locked(0)

    init(_ counter: CoreMetrics.Counter) {
        self.counter = counter
    }

    func increment() {
        count.withLock { $0 += 1 }
        counter.increment()
    }

    var total: Int { count.withLock { $0 } }
}

/// The server's counts at one moment: open sessions and subscriptions on this instance, and
/// uploads, objects pushed and errors (by code) since it started.
package struct MetricsSnapshot: Sendable, Hashable {
    package var sessions: Int
    package var subscriptions: Int
    package var uploads: Int
    package var changesPushed: Int
    package var errors: [String: Int]
}
