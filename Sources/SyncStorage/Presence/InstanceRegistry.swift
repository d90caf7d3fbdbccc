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

    /// Renews this instance's row; returns how many other instances are alive.
    package func heartbeat() async throws -> Int {
        let seconds = Double(lease.components.seconds) + Double(lease.components.attoseconds) / 1e18
        let rows = try await store.client.fetch(
            """
            WITH me AS (
                INSERT INTO psync_instances (name, expires_at) VALUES (\(instance), now() + make_interval(secs => \(seconds)))
                ON CONFLICT (name) DO UPDATE SET expires_at = EXCLUDED.expires_at
            )
            SELECT count(*) FROM psync_instances WHERE name <> \(instance) AND expires_at > now()
            """, logger: logger)
        for try await others in rows.decode(Int.self) { return others }
        return 0
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
