import PostgresNIO
import SyncProtocol

/// Faults a test inflicts on the database from outside the servers: what an operator, a
/// failover or a long-running transaction of another client would do.
extension TestDatabase {
    /// Terminates this database's backends that sit in `LISTEN` (the servers' change
    /// listeners), as a failover or an operator would; returns how many were terminated.
    @discardableResult
    public func terminateListeners() async throws -> Int {
        let rows = try await client.query(
            """
            SELECT count(*) FILTER (WHERE terminated) FROM (
                SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
                WHERE datname = current_database() AND query LIKE 'LISTEN%' AND pid <> pg_backend_pid()
            ) t
            """, logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    /// How many of this database's backends sit in `LISTEN`.
    public func listenerCount() async throws -> Int {
        let rows = try await client.query(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'",
            logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }

    /// Runs `body` while another transaction holds the row lock of `partition` in
    /// `psync_partitions`: the lock every upload to the partition takes to number its commit.
    /// The row is created first (at version 0) when the partition has none.
    public func holdingPartitionLock<Result: Sendable>(
        _ partition: Partition, _ body: @Sendable () async throws -> Result
    ) async throws -> Result {
        try await client.withTransaction(logger: logger) { connection in
            try await connection.query(
                "INSERT INTO psync_partitions (partition, version) VALUES (\(partition.description), 0) ON CONFLICT DO NOTHING",
                logger: logger)
            let rows = try await connection.query(
                "SELECT version FROM psync_partitions WHERE partition = \(partition.description) FOR UPDATE", logger: logger)
            for try await _ in rows {}
            return try await body()
        }
    }
}

extension TestDatabase {
    /// How many of this database's backends are waiting for a lock.
    public func lockWaiters() async throws -> Int {
        let rows = try await client.query(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'",
            logger: logger)
        for try await count in rows.decode(Int.self) { return count }
        return 0
    }
}
