import Logging
import PostgresNIO

/// Applies numbered migrations in order, each in its own transaction, recording each applied
/// file with its checksum in `psync_migrations`.
///
/// Safe when several server processes start at once: they serialize on a PostgreSQL advisory
/// lock, and the later ones find the work done. A file whose checksum differs from the one
/// recorded when it was applied stops the migrator, and so the server.
///
/// ```swift
/// let applied = try await Migrator(client: client, logger: logger).migrate()
/// ```
package struct Migrator: Sendable {
    /// The advisory lock key the migrator holds while it works ("psyncmig" in ASCII).
    static let lockKey: Int64 = 0x7073_796E_636D_6967

    package let client: PostgresClient
    package let migrations: [Migration]
    package let logger: Logger

    /// - Parameter migrations: the migrations to apply; by default those bundled with the engine.
    package init(client: PostgresClient, migrations: [Migration]? = nil, logger: Logger) throws {
        self.client = client
        self.migrations = try migrations ?? Migration.bundled()
        self.logger = logger
    }

    /// Applies every migration not yet applied and returns those it applied.
    @discardableResult
    package func migrate() async throws -> [Migration] {
        try await client.withOpenConnection { connection in
            try await checkWritable(on: connection)
            try await connection.query("SELECT pg_advisory_lock(\(Self.lockKey))", logger: logger)
            do {
                let applied = try await migrate(on: connection)
                try await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                return applied
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                throw error
            }
        }
    }

    /// Throws ``MigrationError/Code/readOnly`` when the database takes no writes, with what to
    /// do about it: pointed at a standby (a replica, or a primary demoted by a failover), the
    /// first statement that writes would otherwise fail with PostgreSQL's bare
    /// `read_only_sql_transaction`.
    private func checkWritable(on connection: PostgresConnection) async throws {
        let rows = try await connection.query(
            "SELECT pg_is_in_recovery(), current_setting('transaction_read_only') = 'on'", logger: logger)
        for try await (inRecovery, readOnly) in rows.decode((Bool, Bool).self) {
            if inRecovery {
                throw MigrationError(
                    .readOnly,
                    "the database server is a standby in recovery and takes no writes: point the database URL at the primary, or at a proxy that always routes to it")
            }
            if readOnly {
                throw MigrationError(
                    .readOnly, "the database session is read-only (default_transaction_read_only is on for this role or database): psync must write")
            }
        }
    }

    /// The versions and checksums recorded in the database.
    package func appliedChecksums() async throws -> [Int: String] {
        try await client.withOpenConnection { connection in
            try await recorded(on: connection)
        }
    }

    /// Whether every migration of this build is applied and none has changed.
    package func isUpToDate() async throws -> Bool {
        let recorded = try await appliedChecksums()
        return migrations.allSatisfy { recorded[$0.version] == $0.checksum }
            && recorded.keys.allSatisfy { version in migrations.contains { $0.version == version } }
    }

    private func migrate(on connection: PostgresConnection) async throws -> [Migration] {
        try await createTable(on: connection)
        let recorded = try await recorded(on: connection)
        let known = Set(migrations.map(\.version))
        if let unknown = recorded.keys.sorted().first(where: { !known.contains($0) }) {
            throw MigrationError(
                .unknownMigration,
                "the database has migration \(unknown), which this build does not know: it was migrated by a newer build")
        }
        for migration in migrations {
            if let checksum = recorded[migration.version], checksum != migration.checksum {
                throw MigrationError(
                    .checksumMismatch,
                    "migration \(migration.version)_\(migration.name) changed after it was applied (recorded \(checksum.prefix(12)), file \(migration.checksum.prefix(12))); add a new migration instead"
                )
            }
        }
        var applied: [Migration] = []
        for migration in migrations where recorded[migration.version] == nil {
            try await apply(migration, on: connection)
            applied.append(migration)
        }
        return applied
    }

    private func apply(_ migration: Migration, on connection: PostgresConnection) async throws {
        logger.info("applying migration", metadata: ["version": "\(migration.version)", "name": "\(migration.name)"])
        try await connection.query("BEGIN", logger: logger)
        do {
            for statement in SQLScript(migration.sql).statements {
                do {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                } catch let error as PSQLError {
                    let reason = error.serverInfo?[.message] ?? "\(error.code)"
                    throw MigrationError(
                        .statementFailed, "migration \(migration.version)_\(migration.name) failed: \(reason)")
                }
            }
            try await connection.query(
                """
                INSERT INTO psync_migrations (version, name, checksum)
                VALUES (\(migration.version), \(migration.name), \(migration.checksum))
                """, logger: logger)
            try await connection.query("COMMIT", logger: logger)
        } catch {
            await connection.rollBack(after: error, logger: logger)
            throw error
        }
    }

    private func createTable(on connection: PostgresConnection) async throws {
        try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS psync_migrations (
                version integer PRIMARY KEY,
                name text NOT NULL,
                checksum text NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """, logger: logger)
    }

    private func recorded(on connection: PostgresConnection) async throws -> [Int: String] {
        var result: [Int: String] = [:]
        let exists = try await connection.query("SELECT to_regclass('psync_migrations') IS NOT NULL", logger: logger)
        for try await present in exists.decode(Bool.self) where !present { return result }
        let rows = try await connection.query("SELECT version, checksum FROM psync_migrations", logger: logger)
        for try await (version, checksum) in rows.decode((Int, String).self) {
            result[version] = checksum
        }
        return result
    }
}
