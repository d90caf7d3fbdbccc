import PostgresNIO
import SyncProtocol

extension ObjectStore {
    /// Removes tombstones older than `age` and records, per partition, the newest version
    /// removed: a client whose cursor is older than that can no longer learn of those
    /// deletions from a catch-up, so it gets a reset instead. Returns how many were removed.
    @discardableResult
    package func pruneTombstones(olderThan age: Duration) async throws -> Int {
        let seconds = Double(age.components.seconds) + Double(age.components.attoseconds) / 1e18
        let rows = try await client.fetch(
            """
            WITH gone AS (
                DELETE FROM psync_objects
                WHERE body IS NULL AND updated_at <= now() - make_interval(secs => \(seconds))
                RETURNING partition, version
            ), floors AS (
                UPDATE psync_partitions p SET pruned_through = GREATEST(p.pruned_through, f.version)
                FROM (SELECT partition, max(version) AS version FROM gone GROUP BY partition) f
                WHERE p.partition = f.partition
                RETURNING 1
            )
            SELECT (SELECT count(*) FROM gone), (SELECT count(*) FROM floors)
            """, logger: logger)
        for try await (removed, _) in rows.decode((Int, Int).self) { return removed }
        return 0
    }

    /// Removes change events older than `age` that every trigger has passed and no open dead
    /// letter refers to. Returns how many were removed.
    @discardableResult
    package func pruneEvents(olderThan age: Duration) async throws -> Int {
        let seconds = Double(age.components.seconds)
        let rows = try await client.fetch(
            """
            WITH horizon AS (
                SELECT coalesce((SELECT min(position) FROM psync_triggers), (SELECT last_seq FROM psync_sequencer)) AS seq
            ), gone AS (
                DELETE FROM psync_events e
                WHERE e.seq IS NOT NULL AND e.seq <= (SELECT seq FROM horizon)
                  AND e.created_at <= now() - make_interval(secs => \(seconds))
                  AND NOT EXISTS (SELECT 1 FROM psync_dead_letters d WHERE d.seq = e.seq AND d.retried_at IS NULL)
                RETURNING 1
            )
            SELECT count(*) FROM gone
            """, logger: logger)
        for try await removed in rows.decode(Int.self) { return removed }
        return 0
    }

    /// Forgets failed-login windows that have ended.
    package func pruneLoginFailures(olderThan age: Duration) async throws {
        let seconds = Double(age.components.seconds)
        try await client.fetch(
            "DELETE FROM psync_login_failures WHERE window_start <= now() - make_interval(secs => \(seconds))", logger: logger)
    }

    /// Gives this database a new epoch, so every cursor handed out before is answered with a
    /// reset. Run it after restoring a backup or cloning the database: the copy would
    /// otherwise accept cursors of the original, whose versions may name other changes.
    package func renewEpoch() async throws {
        try await client.fetch("UPDATE psync_meta SET epoch = gen_random_uuid()", logger: logger)
        resetCachedEpoch()
    }

    /// Removes stored upload outcomes older than `age`; a request id repeated after that is
    /// applied as a new upload. Returns how many were removed.
    @discardableResult
    package func pruneRequests(olderThan age: Duration) async throws -> Int {
        let seconds = Double(age.components.seconds)
        let rows = try await client.fetch(
            """
            WITH gone AS (
                DELETE FROM psync_requests WHERE created_at <= now() - make_interval(secs => \(seconds)) RETURNING 1
            )
            SELECT count(*) FROM gone
            """, logger: logger)
        for try await removed in rows.decode(Int.self) { return removed }
        return 0
    }
}
