import Logging
import PartitionSync
import SyncProtocol
import SyncStorage

/// What the trigger services share: the store and its ledger, the configuration and its
/// clock, this instance's name, the logger, metrics and health, and the deadline of a step.
struct TriggerRuntime: Sendable {
    let store: ObjectStore
    let ledger: TriggerLedger
    let configuration: TriggerConfiguration
    /// This server instance's name, recorded as the lease holder.
    let instance: String
    let logger: Logger
    let metrics: TriggerMetrics
    let health: TriggerHealth
    /// The time on ``TriggerConfiguration/time``'s clock since the service was made.
    let stopwatch: Stopwatch
    /// Keeps the deadlines of steps on the configuration's clock.
    let ticker: DeadlineTicker

    var time: SyncClock { configuration.time }

    /// Runs one step of a loop, giving up after ``TriggerConfiguration/operationTimeout``
    /// (``withDeadline(_:_:ticker:_:)``): no step can hold a loop forever.
    func bounded<Result: Sendable>(
        _ what: @autoclosure () -> String, _ operation: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        try await withDeadline(configuration.operationTimeout, what(), ticker: ticker, operation)
    }

    /// ``bounded(_:_:)`` for work that renews its deadline as it goes (a handler committing
    /// parts of its work: each part gives the run its whole timeout again).
    func bounded<Result: Sendable>(
        _ what: @autoclosure () -> String, renewable operation: @escaping @Sendable (DeadlineRenewal) async throws -> Result
    ) async throws -> Result {
        try await withDeadline(configuration.operationTimeout, what(), ticker: ticker, renewable: operation)
    }

    /// A logger whose entries name `trigger`.
    func logger(trigger: String) -> Logger {
        var logger = self.logger
        logger[metadataKey: "trigger"] = "\(trigger)"
        return logger
    }
}

extension Error {
    /// The error as a log shows it, cut to 300 characters.
    var logText: String { String(String(reflecting: self).prefix(300)) }
}
