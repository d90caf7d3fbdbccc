import Locking
import PartitionSync

/// What the trigger watchdog last found, per trigger: its lag behind the event log, its
/// lease holder, and what is wrong with it. Served by `GET /health/triggers`.
///
/// The watchdog reads the ledger on its own schedule, apart from the triggers' loops, so a
/// loop that hangs or died still shows: its lag grows, its lease expires, its loop stops
/// beating.
package final class TriggerHealth: Sendable {
    /// What can be wrong with a trigger.
    package enum Problem: String, Sendable, Hashable {
        /// This instance's loop of the trigger has not moved for longer than twice
        /// ``TriggerConfiguration/operationTimeout``.
        case stuck
        /// No instance has held the lease for longer than ``TriggerConfiguration/leaseDuration``
        /// and a renewal: nobody runs it.
        case noLease = "no_lease"
        /// More than ``TriggerConfiguration/maximumLag`` events behind.
        case behind
        /// The watchdog could not read the ledger recently (the database is unreachable).
        case unknown
    }

    /// One trigger's state.
    package struct Report: Sendable, Hashable {
        package var name: String
        /// Events numbered but not yet passed, as stored.
        package var lag: Int64
        package var leaseHolder: String?
        package var problems: [Problem]
    }

    private struct State {
        // Times on the stopwatch.
        var beats: [String: Duration] = [:]
        var leaseless: [String: Duration] = [:]
        var lags: [String: Int64] = [:]
        var holders: [String: String] = [:]
        var checked: Duration?
    }

    private let state = Locked(State())
    let names: [String]
    let configuration: TriggerConfiguration
    /// Time on ``TriggerConfiguration/time``'s clock, since the trigger service was made.
    let stopwatch: Stopwatch

    init(names: [String], configuration: TriggerConfiguration, stopwatch: Stopwatch) {
        self.names = names
        self.configuration = configuration
        self.stopwatch = stopwatch
    }

    private var now: Duration { stopwatch.elapsed }

    /// A trigger's loop on this instance is alive (called at every step).
    func beat(_ trigger: String) {
        let now = self.now
        state.withLock { $0.beats[trigger] = now }
    }

    /// What the watchdog read from the ledger.
    func observed(_ trigger: String, lag: Int64, leaseHolder: String?) {
        let now = self.now
        state.withLock { state in
            state.lags[trigger] = lag
            state.holders[trigger] = leaseHolder
            if leaseHolder == nil {
                if state.leaseless[trigger] == nil { state.leaseless[trigger] = now }
            } else {
                state.leaseless[trigger] = nil
            }
        }
    }

    func checked() {
        let now = self.now
        state.withLock { $0.checked = now }
    }

    /// Every trigger of this instance, with its problems.
    package var reports: [Report] {
        let now = self.now
        let state = self.state.withLock { $0 }
        let stall = configuration.operationTimeout * 2
        let leaseGrace = configuration.leaseDuration + configuration.leaseRenewal * 2
        // Not read for a while: the watchdog's own reads are bounded by the operation timeout.
        let stale = (state.checked ?? .zero) + configuration.operationTimeout + configuration.pollInterval * 3 < now
        return names.map { name in
            var problems: [Problem] = []
            if (state.beats[name] ?? .zero) + stall < now { problems.append(.stuck) }
            if let since = state.leaseless[name], since + leaseGrace < now { problems.append(.noLease) }
            if let lag = state.lags[name], lag > configuration.maximumLag { problems.append(.behind) }
            if stale { problems.append(.unknown) }
            return Report(name: name, lag: state.lags[name] ?? 0, leaseHolder: state.holders[name], problems: problems)
        }
    }

    /// Whether no trigger has a problem.
    package var isHealthy: Bool { reports.allSatisfy(\.problems.isEmpty) }
}
