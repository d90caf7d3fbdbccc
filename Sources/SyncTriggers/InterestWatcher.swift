import PartitionSync
import ServiceLifecycle
import SyncStorage

/// Keeps the store recording the events of this instance's triggers, or every event while
/// another instance runs (or is about to run) a trigger this one does not know, as during a
/// rolling deployment that adds one. Looks every ``TriggerConfiguration/pollInterval``; until
/// the first look, and when a look fails, every event is recorded.
final class InterestWatcher: Service, Sendable {
    let runtime: TriggerRuntime
    let triggers: [Trigger]

    init(runtime: TriggerRuntime, triggers: [Trigger]) {
        self.runtime = runtime
        self.triggers = triggers
    }

    /// The events this instance's triggers handle.
    var interest: EventInterest {
        let triggers = self.triggers
        return .matching { event in triggers.contains { $0.matches(event) } }
    }

    func run() async {
        let (store, ledger, logger) = (runtime.store, runtime.ledger, runtime.logger)
        let local = Set(triggers.map(\.name))
        var recordingAll = true
        store.recordEvents(.all)
        await Periodic(every: runtime.configuration.pollInterval, time: runtime.time).run {
            do {
                let foreign = try await runtime.bounded("reading the registered triggers") { try await ledger.activeNames() }
                    .filter { !local.contains($0) }.sorted()
                if foreign.isEmpty == recordingAll {
                    recordingAll = !foreign.isEmpty
                    store.recordEvents(recordingAll ? .all : interest)
                    if recordingAll {
                        logger.notice("another instance runs triggers this one does not: recording every event", metadata: ["triggers": "\(foreign)"])
                    }
                }
            } catch {
                if isStopping { return }
                if !recordingAll {
                    recordingAll = true
                    store.recordEvents(.all)
                }
                logger.warning("reading the registered triggers failed", metadata: ["error": "\(error.logText)"])
            }
        }
    }
}
