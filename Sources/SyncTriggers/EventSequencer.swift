import Locking
import PartitionSync
import ServiceLifecycle
import SyncStorage

/// Numbers committed events (``EventLog/sequencePass(limit:)``), pass after pass, and wakes the
/// runners of the triggers the numbered events may concern.
///
/// Every instance runs one; their passes serialize in the database. It is woken by this
/// process's commits that recorded events and by other instances' (``ChangeNotification/eventsRecorded``),
/// lets commits gather for ``TriggerConfiguration/sequencingDelay``, and otherwise looks every
/// ``TriggerConfiguration/pollInterval`` (a process that died between its commit and its
/// announcement).
final class EventSequencer: Service, Sendable {
    /// The most events one pass numbers.
    static let passLimit = 10_000

    let runtime: TriggerRuntime
    private let signal: WakeSignal
    /// Called after a round of passes with the shapes of the events it numbered.
    private let sequenced: @Sendable (Set<ChangeEvent.Shape>) -> Void
    private let last = Locked<Int64>(0)

    init(runtime: TriggerRuntime, sequenced: @escaping @Sendable (Set<ChangeEvent.Shape>) -> Void) {
        self.runtime = runtime
        self.signal = WakeSignal(time: runtime.time)
        self.sequenced = sequenced
    }

    /// The last position this instance's sequencer numbered.
    var sequencedHere: Int64 { last.withLock { $0 } }

    /// New events were committed: a pass is due.
    func wake() { signal.signal() }

    func run() async {
        let store = runtime.store
        let configuration = runtime.configuration
        while !isStopping {
            if configuration.sequencingDelay > .zero { await sleepUnlessStopping(configuration.sequencingDelay, on: runtime.time) }
            do {
                var shapes: Set<ChangeEvent.Shape> = []
                while let pass = try await runtime.bounded("a sequencing pass", { try await EventLog(store: store).sequencePass(limit: Self.passLimit) }) {
                    shapes.formUnion(pass.shapes)
                    last.withLock { $0 = max($0, pass.last) }
                    // A pass below its limit numbered every event committed before it began;
                    // the commits since then signalled, and wait for the next delay. (Going on
                    // at once made a pass per commit under load, each its own transaction.)
                    if pass.count < Self.passLimit { break }
                }
                if !shapes.isEmpty { sequenced(shapes) }
            } catch {
                if isStopping { return }
                runtime.logger.warning("sequencing events failed", metadata: ["error": "\(error.logText)"])
            }
            await waitUnlessStopping(for: signal, timeout: configuration.pollInterval)
        }
    }
}
