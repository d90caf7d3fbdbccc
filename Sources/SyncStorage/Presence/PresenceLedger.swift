import Logging
import PartitionSync
import PostgresNIO
import SyncProtocol

/// Which users have open sessions, across server instances. Each instance keeps, per user,
/// its count of sessions in a row it renews; a user's first session opening and last session
/// closing are recorded as `session` events (`opened`, `closed`) in the same transaction, so
/// triggers see each exactly once. Rows of an instance that stopped renewing expire, and
/// whichever instance notices closes the users they held.
package struct PresenceLedger: Sendable {
    let store: ObjectStore
    package let instance: String
    package let lease: Duration
    var logger: Logger { store.logger }

    package init(store: ObjectStore, instance: String, lease: Duration) {
        self.store = store
        self.instance = instance
        self.lease = lease
    }

    private var seconds: Double { Double(lease.components.seconds) + Double(lease.components.attoseconds) / 1e18 }

    /// One more session of a user on this instance.
    package func opened(_ userID: String) async throws {
        try await store.withWriteTransaction(author: "system:presence") { transaction in
            let before = try await lockAndCount(userID, transaction.connection)
            try await transaction.connection.query(
                """
                INSERT INTO psync_presence AS p (user_id, instance, sessions, expires_at)
                VALUES (\(userID), \(instance), 1, now() + make_interval(secs => \(seconds)))
                ON CONFLICT (user_id, instance) DO UPDATE
                  SET sessions = CASE WHEN p.expires_at > now() THEN p.sessions + 1 ELSE 1 END, expires_at = EXCLUDED.expires_at
                """, logger: logger)
            if before == 0 { transaction.recordUserEvent(.session, .opened, userID: userID) }
        }
    }

    /// One session fewer of a user on this instance.
    package func closed(_ userID: String) async throws {
        try await store.withWriteTransaction(author: "system:presence") { transaction in
            _ = try await lockAndCount(userID, transaction.connection)
            try await transaction.connection.query(
                """
                UPDATE psync_presence SET sessions = sessions - 1 WHERE user_id = \(userID) AND instance = \(instance)
                """, logger: logger)
            try await transaction.connection.query(
                "DELETE FROM psync_presence WHERE user_id = \(userID) AND instance = \(instance) AND sessions <= 0", logger: logger)
            if try await count(userID, transaction.connection) == 0 {
                transaction.recordUserEvent(.session, .closed, userID: userID)
            }
        }
    }

    /// Renews this instance's rows.
    package func heartbeat() async throws {
        try await store.client.fetch(
            "UPDATE psync_presence SET expires_at = now() + make_interval(secs => \(seconds)) WHERE instance = \(instance)",
            logger: logger)
    }

    /// Removes expired rows (of instances that died) and closes the users left without sessions.
    /// Returns how many users were closed.
    @discardableResult
    package func reap() async throws -> Int {
        var users: [String] = []
        for try await user in try await store.client.fetch(
            "SELECT DISTINCT user_id FROM psync_presence WHERE expires_at <= now() LIMIT 1000", logger: logger
        ).decode(String.self) { users.append(user) }
        var closed = 0
        for user in users {
            let wasClosed = try await store.withWriteTransaction(author: "system:presence") { transaction -> Bool in
                _ = try await lockAndCount(user, transaction.connection)
                var removed = 0
                for try await _ in try await transaction.connection.query(
                    "DELETE FROM psync_presence WHERE user_id = \(user) AND expires_at <= now() RETURNING 1", logger: logger
                ) { removed += 1 }
                guard removed > 0, try await count(user, transaction.connection) == 0 else { return false }
                transaction.recordUserEvent(.session, .closed, userID: user)
                return true
            }
            if wasClosed { closed += 1 }
        }
        return closed
    }

    /// Closes every user of this instance (on shutdown).
    package func closeAll() async throws {
        var users: [String] = []
        for try await user in try await store.client.fetch(
            "SELECT user_id FROM psync_presence WHERE instance = \(instance)", logger: logger
        ).decode(String.self) { users.append(user) }
        for user in users {
            try await store.withWriteTransaction(author: "system:presence") { transaction in
                _ = try await lockAndCount(user, transaction.connection)
                try await transaction.connection.query(
                    "DELETE FROM psync_presence WHERE user_id = \(user) AND instance = \(instance)", logger: logger)
                if try await count(user, transaction.connection) == 0 {
                    transaction.recordUserEvent(.session, .closed, userID: user)
                }
            }
        }
    }

    /// How many sessions `userID` has open now, on any instance, read inside the transaction of
    /// `connection` after taking the user's presence lock: a session that opens or closes
    /// meanwhile commits either before this read (and is counted) or after this transaction
    /// (and its event comes after whatever this transaction wrote). For a trigger that sets
    /// up what the presence trigger needs (the User record) and must not lose a session
    /// event that arrived first.
    package static func openSessions(of userID: String, on connection: PostgresConnection, logger: Logger) async throws -> Int {
        try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(userID), 7))", logger: logger)
        for try await total in try await connection.query(
            "SELECT coalesce(sum(sessions), 0)::bigint FROM psync_presence WHERE user_id = \(userID) AND expires_at > now()",
            logger: logger
        ).decode(Int.self) { return total }
        return 0
    }

    /// Serializes presence changes of one user (across instances) and counts their live sessions.
    private func lockAndCount(_ userID: String, _ connection: PostgresConnection) async throws -> Int {
        try await connection.query("SELECT pg_advisory_xact_lock(hashtextextended(\(userID), 7))", logger: logger)
        return try await count(userID, connection)
    }

    private func count(_ userID: String, _ connection: PostgresConnection) async throws -> Int {
        for try await total in try await connection.query(
            "SELECT coalesce(sum(sessions), 0)::bigint FROM psync_presence WHERE user_id = \(userID) AND expires_at > now()",
            logger: logger
        ).decode(Int.self) { return total }
        return 0
    }
}
