import CoreMetrics
import Logging
import PartitionSync
import ServiceLifecycle
import SyncProtocol
import SyncStorage

/// Runs an application's triggers on this instance, as four kinds of service: the
/// ``EventSequencer`` (numbers committed events), the ``InterestWatcher`` (which events the
/// store records), the ``TriggerWatchdog`` (lag and ``health``) and one ``TriggerRunner`` per
/// trigger (its lease and its events, by the policy of ``TriggerRunnerStateMachine``).
///
/// Every instance runs the sequencer (its passes serialize in the database) and competes for
/// each trigger's lease; the holder renews it every ``TriggerConfiguration/leaseRenewal`` and
/// another instance takes over at most ``TriggerConfiguration/leaseDuration`` after it stops.
/// Each handling transaction checks the lease before it commits, so an instance that lost its
/// lease cannot commit an event twice.
package final class TriggerService: Service, Sendable {
    package let triggers: [Trigger]
    /// What the watchdog last found (`/health/triggers`).
    package let health: TriggerHealth
    let runtime: TriggerRuntime
    let sequencer: EventSequencer
    let interestWatcher: InterestWatcher
    let watchdog: TriggerWatchdog
    let runners: [TriggerRunner]

    /// - Parameters:
    ///   - instance: this server instance's name, recorded as the lease holder.
    ///   - metricsFactory: where per-trigger lag and failures are reported.
    package init(
        store: ObjectStore, triggers: [Trigger], configuration: TriggerConfiguration = .init(), instance: String,
        metricsFactory: any MetricsFactory, logger: Logger
    ) {
        self.triggers = triggers
        let stopwatch = Stopwatch(configuration.time.clock)
        let health = TriggerHealth(names: triggers.map(\.name), configuration: configuration, stopwatch: stopwatch)
        self.health = health
        let runtime = TriggerRuntime(
            store: store, ledger: TriggerLedger(store: store), configuration: configuration, instance: instance, logger: logger,
            metrics: TriggerMetrics(factory: metricsFactory), health: health, stopwatch: stopwatch,
            ticker: DeadlineTicker(resolution: .milliseconds(100), time: configuration.time))
        self.runtime = runtime
        let runners = triggers.map { TriggerRunner(trigger: $0, runtime: runtime) }
        self.runners = runners
        // Only the runners of triggers the numbered events may concern are woken.
        sequencer = EventSequencer(runtime: runtime) { shapes in
            for runner in runners where shapes.contains(where: runner.trigger.filter.passes) { runner.wake() }
        }
        interestWatcher = InterestWatcher(runtime: runtime, triggers: triggers)
        watchdog = TriggerWatchdog(runtime: runtime, names: triggers.map(\.name))
    }

    /// The events this instance's triggers handle.
    package var interest: EventInterest { interestWatcher.interest }

    /// A notification on the change channel, parsed by the listener: events were recorded
    /// (a sequencing pass is due), or numbered by another instance (the runners look).
    package func notified(_ notification: ChangeNotification) {
        switch notification {
        case .eventsRecorded:
            sequencer.wake()
        case .sequenced(let through):
            // This instance's own passes woke the runners they concern already; another
            // instance's pass wakes them all.
            guard through > sequencer.sequencedHere else { return }
            for runner in runners { runner.wake() }
        case .committed, .instanceArrived, .revoked:
            break
        }
    }

    /// Whether every trigger of this service has its row in the ledger: from then on, the
    /// events committed reach it (a trigger starts at the end of the event log when it is
    /// registered).
    package func registered() async throws -> Bool {
        Set(triggers.map(\.name)).isSubset(of: try await runtime.ledger.activeNames())
    }

    package func run() async throws {
        // Commits of this process that recorded events wake the sequencer at once; other
        // instances' commits arrive as `events` notifications.
        runtime.store.observeCommits { [sequencer] commit in
            if commit.recordedEvents > 0 { sequencer.wake() }
        }
        let services: [any Service] = [interestWatcher, sequencer, watchdog] + runners
        await withDiscardingTaskGroup { group in
            for service in services {
                group.addTask { try? await service.run() }
            }
        }
    }
}
