import PartitionSync
import ServiceLifecycle
import SyncStorage

/// Every ``TriggerConfiguration/pollInterval``, reads each trigger's stored position and lease,
/// apart from the runners: the lag metric and ``TriggerHealth`` stay true when a runner hangs
/// or died.
final class TriggerWatchdog: Service, Sendable {
    let runtime: TriggerRuntime
    let names: [String]

    init(runtime: TriggerRuntime, names: [String]) {
        self.runtime = runtime
        self.names = names
    }

    func run() async {
        await Periodic(every: runtime.configuration.pollInterval, time: runtime.time).run {
            await check()
        }
    }

    /// One look at the ledger.
    func check() async {
        let (store, ledger, health) = (runtime.store, runtime.ledger, runtime.health)
        do {
            let (head, statuses) = try await runtime.bounded("reading the triggers' state") {
                (try await EventLog(store: store).head(), try await ledger.statuses())
            }
            let now = runtime.time.now()
            for name in names {
                guard let status = statuses.first(where: { $0.name == name }) else { continue }
                let lag = max(0, head - status.position)
                runtime.metrics.lag(name, events: Int(lag))
                let holder = status.leaseExpires.map { $0 > now } == true ? status.leaseHolder : nil
                health.observed(name, lag: lag, leaseHolder: holder)
            }
            health.checked()
            for report in health.reports where !report.problems.isEmpty {
                runtime.logger.warning("trigger unhealthy", metadata: [
                    "trigger": "\(report.name)", "problems": "\(report.problems.map(\.rawValue))", "lag": "\(report.lag)",
                ])
            }
        } catch {
            if isStopping { return }
            runtime.logger.debug("the trigger watchdog could not read the ledger", metadata: ["error": "\(error.logText)"])
        }
    }
}
