import CoreMetrics
import Logging
import ServiceLifecycle
import SyncProtocol
import SyncStorage

/// Deletes, every ``BlobConfiguration/collectInterval``, the blobs nothing references any
/// more (``BlobStore/collect(unreferencedFor:releasedFor:limit:)``): a blob never referenced
/// after its grace period, a blob whose last reference was released longer ago than
/// tombstones are kept. Every instance runs one; they skip each other's blobs.
final class BlobCollector: Service, Sendable {
    let blobs: BlobStore
    let configuration: BlobConfiguration
    /// How long tombstones are kept: a blob a tombstone's object referenced is kept as long.
    let releasedFor: Duration
    let metrics: ServerMetrics
    let time: SyncClock
    let logger: Logger

    init(blobs: BlobStore, configuration: BlobConfiguration, releasedFor: Duration, metrics: ServerMetrics, time: SyncClock, logger: Logger) {
        self.blobs = blobs
        self.configuration = configuration
        self.releasedFor = releasedFor
        self.metrics = metrics
        self.time = time
        self.logger = logger
    }

    func run() async {
        await Periodic(every: configuration.collectInterval, time: time).run {
            do {
                while true {
                    let collected = try await blobs.collect(unreferencedFor: configuration.unreferencedGrace, releasedFor: releasedFor)
                    metrics.blobsCollected.increment(by: collected)
                    if collected < 500 || Task.isCancelled || Task.isShuttingDownGracefully { break }
                }
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                logger.warning("blob collection failed", metadata: ["error": "\(String(reflecting: error).prefix(300))"])
            }
        }
    }
}
