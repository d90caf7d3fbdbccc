import Foundation
import Logging
import PartitionSync
import SyncProtocol
import SyncStorage

/// Inspects triggers and replays dead letters: behind `psync triggers …` and the admin HTTP
/// endpoints.
package struct TriggerAdmin: Sendable {
    /// A trigger's progress against the event log.
    package struct Report: Sendable, Hashable {
        package var name: String
        package var position: Int64
        /// Events numbered but not yet passed by the trigger.
        package var lag: Int64
        /// The instance holding the lease now; `nil` when nobody runs the trigger.
        package var leaseHolder: String?
        package var deadLetters: Int

        /// What is wrong, as `psync triggers list` shows it: `no_lease` (nobody runs it) and
        /// `behind` (more than `maximumLag` events behind).
        package func problems(maximumLag: Int64) -> [String] {
            var problems: [String] = []
            if leaseHolder == nil { problems.append(TriggerHealth.Problem.noLease.rawValue) }
            if lag > maximumLag { problems.append(TriggerHealth.Problem.behind.rawValue) }
            return problems
        }
    }

    let store: ObjectStore
    let triggers: [Trigger]
    let logger: Logger
    /// The wall time a lease's expiry is compared with.
    let time: SyncClock

    package init(store: ObjectStore, triggers: [Trigger], logger: Logger, time: SyncClock = .system) {
        self.store = store
        self.triggers = triggers
        self.logger = logger
        self.time = time
    }

    var ledger: TriggerLedger { TriggerLedger(store: store) }

    /// Every known trigger's position, lag, lease holder and open dead letters.
    package func reports() async throws -> [Report] {
        let head = try await EventLog(store: store).head()
        let letters = try await ledger.deadLetters()
        let now = time.now()
        return try await ledger.statuses().map { status in
            Report(
                name: status.name, position: status.position, lag: max(0, head - status.position),
                leaseHolder: status.leaseExpires.map { $0 > now } == true ? status.leaseHolder : nil,
                deadLetters: letters.filter { $0.trigger == status.name }.count)
        }
    }

    /// Dead letters not yet replayed, newest first.
    package func deadLetters(trigger: String? = nil) async throws -> [TriggerLedger.DeadLetter] {
        try await ledger.deadLetters(trigger: trigger)
    }

    /// Replays a dead letter through its trigger's handler, once: the handler's writes and
    /// the dead letter's `retried` mark commit together. A handler that fails again leaves the
    /// dead letter open with the new error, and the error is thrown.
    package func retry(_ id: Int64) async throws {
        guard let letter = try await ledger.deadLetters(includeRetried: true).first(where: { $0.id == id }), letter.retried == nil else {
            throw TriggerError(.notFound, "no open dead letter \(id)")
        }
        guard let trigger = triggers.first(where: { $0.name == letter.trigger }) else {
            throw TriggerError(.notFound, "dead letter \(id) belongs to trigger '\(letter.trigger)', which this build does not have")
        }
        guard let stored = try await EventLog(store: store).event(at: letter.position) else {
            throw TriggerError(.notFound, "event \(letter.position) of dead letter \(id) is gone")
        }
        // Its images as the trigger's reads hand them over (``ChangeEvent/Images``).
        let event = trigger.images.applied(to: stored)
        let ledger = self.ledger
        let logger = self.logger
        do {
            try await store.withWriteTransaction(author: "trigger:\(trigger.name)", depth: event.depth + 1) { transaction in
                guard try await ledger.markRetried(id, on: transaction.connection) else { return }
                try await trigger.handler(event, TriggerContext(transaction: transaction, logger: logger, trigger: trigger.name))
            }
        } catch {
            try await store.withWriteTransaction(author: "trigger:\(trigger.name)") { transaction in
                try await ledger.deadLetter(trigger.name, position: event.position, attempts: letter.attempts + 1, error: "\(error)", on: transaction.connection)
            }
            throw error
        }
    }
}
