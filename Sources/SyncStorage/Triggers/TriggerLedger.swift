import Foundation
import Logging
import PostgresNIO
import SyncProtocol

/// The stored state of triggers: each one's position and lease, the events of concurrent
/// triggers already handled, and dead letters.
package struct TriggerLedger: Sendable {
    /// A dead-lettered event.
    package struct DeadLetter: Sendable, Hashable {
        package var id: Int64
        package var trigger: String
        package var position: Int64
        package var attempts: Int
        package var error: String
        package var created: Date
        package var retried: Date?
    }

    /// A trigger's progress.
    package struct Status: Sendable, Hashable {
        package var name: String
        package var position: Int64
        package var leaseHolder: String?
        package var leaseExpires: Date?
    }

    let store: ObjectStore
    var logger: Logger { store.logger }

    package init(store: ObjectStore) {
        self.store = store
    }

    /// Makes sure a trigger has a row; whether it was new. A new trigger starts at the current
    /// end of the event log: it handles events committed from now on, not the history.
    @discardableResult
    package func register(_ name: String) async throws -> Bool {
        let rows = try await store.client.fetch(
            """
            INSERT INTO psync_triggers (name, position)
            SELECT \(name), last_seq FROM psync_sequencer
            ON CONFLICT (name) DO NOTHING
            RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Whether some instance holds a trigger's lease now.
    package func anyLeaseHeld() async throws -> Bool {
        for try await held in try await store.client.fetch(
            "SELECT EXISTS (SELECT 1 FROM psync_triggers WHERE lease_expires > now())", logger: logger
        ).decode(Bool.self) { return held }
        return false
    }

    /// Moves triggers nobody has run yet to the current end of the event log.
    package func restart(_ names: [String]) async throws {
        try await store.client.fetch(
            """
            UPDATE psync_triggers SET position = GREATEST(position, (SELECT last_seq FROM psync_sequencer)), updated_at = now()
            WHERE name = ANY(\(names)::text[]) AND lease_holder IS NULL
            """, logger: logger)
    }

    /// The triggers some instance runs (its lease is current) or is about to run (registered
    /// or released within the last minute): events they match must be recorded.
    package func activeNames() async throws -> [String] {
        let rows = try await store.client.fetch(
            """
            SELECT name FROM psync_triggers
            WHERE lease_expires > now() OR (lease_holder IS NULL AND updated_at > now() - interval '1 minute')
            """, logger: logger)
        var names: [String] = []
        for try await name in rows.decode(String.self) { names.append(name) }
        return names
    }

    /// What taking or renewing a lease answered.
    package struct Lease: Sendable, Hashable {
        /// The trigger's stored position.
        package var position: Int64
        /// The lease was last taken on the database's current timeline: whatever the holder
        /// read and passed since is of this history. `false` after a failover (or the first
        /// lease since migration 0014): the holder's position in memory, and the events it has
        /// read, may be from commits the database no longer has, and it starts again from
        /// ``position``.
        package var continued: Bool

        package init(position: Int64, continued: Bool) {
            self.position = position
            self.continued = continued
        }
    }

    /// Takes or renews the lease; returns the trigger's position while this holder has it, or
    /// `nil` when another holder has it. `passed`: a position the holder has passed without
    /// handling anything there, stored with the renewal, unless the lease was last taken on
    /// another timeline (the database failed over since: `passed` may be from a lost tail).
    package func acquireLease(_ name: String, holder: String, duration: Duration, passed: Int64? = nil) async throws -> Lease? {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        let rows = try await store.client.fetch(
            """
            WITH last AS (
                SELECT lease_timeline = psync_timeline() AS continued, psync_timeline() AS timeline
                FROM psync_triggers WHERE name = \(name) FOR UPDATE)
            UPDATE psync_triggers t
            SET lease_holder = \(holder), lease_expires = now() + make_interval(secs => \(seconds)), updated_at = now(),
                position = CASE WHEN last.continued THEN GREATEST(t.position, coalesce(\(passed)::bigint, t.position))
                                ELSE t.position END,
                lease_timeline = last.timeline
            FROM last
            WHERE t.name = \(name) AND (t.lease_holder = \(holder) OR t.lease_holder IS NULL OR t.lease_expires < now())
            RETURNING t.position, last.continued
            """, logger: logger)
        for try await (position, continued) in rows.decode((Int64, Bool).self) { return Lease(position: position, continued: continued) }
        return nil
    }

    /// Gives the lease up (on shutdown), so another instance takes over at once.
    package func releaseLease(_ name: String, holder: String) async throws {
        try await store.client.fetch(
            "UPDATE psync_triggers SET lease_holder = NULL, lease_expires = NULL, updated_at = now() WHERE name = \(name) AND lease_holder = \(holder)",
            logger: logger)
    }

    /// Moves the position forward inside the transaction of `connection`, only while the
    /// lease is held: the fence that keeps an instance that lost its lease from committing.
    /// With `from`, also only while the stored position is at most that (where the handler
    /// started): a transaction whose COMMIT answer was lost may have committed, and the events
    /// it handled must not be handled again. Returns `false` when the lease is no longer held
    /// or the position has moved past `from`.
    package func advance(
        _ name: String, holder: String, to position: Int64, from start: Int64? = nil, on connection: PostgresConnection
    ) async throws -> Bool {
        let rows = try await connection.query(
            """
            UPDATE psync_triggers SET position = GREATEST(position, \(position)), updated_at = now()
            WHERE name = \(name) AND lease_holder = \(holder) AND lease_expires > now() AND lease_timeline = psync_timeline()
              AND (\(start)::bigint IS NULL OR position <= \(start)::bigint)
            RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Renews the lease inside the transaction of `connection` (a part of a handler's work
    /// committing, docs/TRIGGERS.md "Work in parts"), only while it is held and the stored
    /// position is at most `start`: the trigger's row stays locked until that transaction
    /// ends. Held means still this instance's: a lease that expired while the handler worked
    /// (the loop renews only between steps) and that no other instance took is renewed, since
    /// taking it over sets its holder, under the same row lock. It then lasts `duration` from
    /// the moment of this statement (`clock_timestamp()`), not from the transaction's start
    /// (`now()`), which after a long handler's first reads would renew it into the past.
    /// Returns `false` when another instance holds the lease or the position has moved past
    /// `start`.
    package func renewLease(
        _ name: String, holder: String, duration: Duration, from start: Int64, on connection: PostgresConnection
    ) async throws -> Bool {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        let rows = try await connection.query(
            """
            UPDATE psync_triggers SET lease_expires = clock_timestamp() + make_interval(secs => \(seconds)), updated_at = clock_timestamp()
            WHERE name = \(name) AND lease_holder = \(holder) AND lease_timeline = psync_timeline() AND position <= \(start)
            RETURNING 1
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Moves the position forward on its own (past events the trigger does not handle), while
    /// the lease is held. Returns `false` when it is not.
    package func advance(_ name: String, holder: String, to position: Int64) async throws -> Bool {
        try await store.client.withOpenConnection { connection in
            try await advance(name, holder: holder, to: position, on: connection)
        }
    }

    /// Records inside a transaction that a concurrent trigger handled an event; `false` if it
    /// already had (the transaction must then do nothing).
    package func markDone(_ name: String, position: Int64, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            "INSERT INTO psync_trigger_done (trigger, seq) VALUES (\(name), \(position)) ON CONFLICT DO NOTHING RETURNING 1",
            logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Forgets done-markers at or below a position the trigger has passed.
    package func clearDone(_ name: String, through position: Int64) async throws {
        try await store.client.fetch(
            "DELETE FROM psync_trigger_done WHERE trigger = \(name) AND seq <= \(position)", logger: logger)
    }

    /// Records a dead letter inside a transaction (idempotent per trigger and event).
    package func deadLetter(_ name: String, position: Int64, attempts: Int, error: String, on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            INSERT INTO psync_dead_letters (trigger, seq, attempts, error) VALUES (\(name), \(position), \(attempts), \(error))
            ON CONFLICT (trigger, seq) DO UPDATE SET attempts = EXCLUDED.attempts, error = EXCLUDED.error, retried_at = NULL
            """, logger: logger)
    }

    /// Dead letters, newest first; by default only those not yet retried successfully.
    package func deadLetters(trigger: String? = nil, includeRetried: Bool = false) async throws -> [DeadLetter] {
        let rows = try await store.client.fetch(
            """
            SELECT id, trigger, seq, attempts, error, created_at, retried_at FROM psync_dead_letters
            WHERE (\(trigger)::text IS NULL OR trigger = \(trigger)) AND (\(includeRetried) OR retried_at IS NULL)
            ORDER BY id DESC
            """, logger: logger)
        var letters: [DeadLetter] = []
        for try await (id, trigger, seq, attempts, error, created, retried) in rows.decode((Int64, String, Int64, Int, String, Date, Date?).self) {
            letters.append(DeadLetter(id: id, trigger: trigger, position: seq, attempts: attempts, error: error, created: created, retried: retried))
        }
        return letters
    }

    /// Marks a dead letter retried inside the transaction that handled it again; `false` if it
    /// does not exist or was already retried.
    package func markRetried(_ id: Int64, on connection: PostgresConnection) async throws -> Bool {
        let rows = try await connection.query(
            "UPDATE psync_dead_letters SET retried_at = now() WHERE id = \(id) AND retried_at IS NULL RETURNING 1", logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Every trigger's position and lease.
    package func statuses() async throws -> [Status] {
        let rows = try await store.client.fetch(
            "SELECT name, position, lease_holder, lease_expires FROM psync_triggers ORDER BY name", logger: logger)
        var result: [Status] = []
        for try await (name, position, holder, expires) in rows.decode((String, Int64, String?, Date?).self) {
            result.append(Status(name: name, position: position, leaseHolder: holder, leaseExpires: expires))
        }
        return result
    }
}
