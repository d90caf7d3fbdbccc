import Logging
import PostgresNIO

/// The server instances that share the database, each keeping a row alive while it runs
/// (`psync_instances`).
package struct InstanceRegistry: Sendable {
    package let store: ObjectStore
    /// This instance's name.
    package let instance: String
    /// How long a row lives without renewal.
    package let lease: Duration
    var logger: Logger { store.logger }

    package init(store: ObjectStore, instance: String, lease: Duration) {
        self.store = store
        self.instance = instance
        self.lease = lease
    }

    /// Renews this instance's row; returns how many other instances are alive, and how many of
    /// them are of an earlier build, which reads bodies without the counters raised in rows of
    /// their own (migration 0020). This instance says it does not read the counters kept in
    /// the objects' rows (`reads_counters`, migration 0018) either: the builds of 0018 and 0019
    /// raise counters into those rows only while no instance says so.
    package func heartbeat() async throws -> (others: Int, earlier: Int) {
        let seconds = Double(lease.components.seconds) + Double(lease.components.attoseconds) / 1e18
        let rows = try await store.client.fetch(
            """
            WITH me AS (
                INSERT INTO psync_instances (name, expires_at, reads_counters, reads_counter_rows)
                VALUES (\(instance), now() + make_interval(secs => \(seconds)), false, true)
                ON CONFLICT (name) DO UPDATE SET expires_at = EXCLUDED.expires_at, reads_counters = false, reads_counter_rows = true
            )
            SELECT count(*), count(*) FILTER (WHERE NOT reads_counter_rows) FROM psync_instances WHERE name <> \(instance) AND expires_at > now()
            """, logger: logger)
        for try await (others, earlier) in rows.decode((Int, Int).self) { return (others, earlier) }
        return (0, 0)
    }

    /// Renews this instance's row, and tells the store whether it may raise counters beside the
    /// bodies (no instance of an earlier build is alive); returns how many other instances are alive.
    package func beat() async throws -> Int {
        let (others, earlier) = try await heartbeat()
        store.raisesCountersApart(earlier == 0)
        return others
    }

    /// Tells the running instances that this one started: on hearing it they announce their
    /// commits from then on, without waiting for their next heartbeat.
    package func announceArrival() async throws {
        try await store.client.fetch(
            "SELECT pg_notify(\(ObjectStore.notificationChannel), \(ChangeNotification.instanceArrived(instance).payload))", logger: logger)
    }

    /// Removes this instance's row (on shutdown), and rows that expired long ago.
    package func leave() async throws {
        try await store.client.fetch(
            "DELETE FROM psync_instances WHERE name = \(instance) OR expires_at < now() - interval '1 day'", logger: logger)
    }
}
