import PostgresNIO
import SyncStorage
import SyncTesting
import Testing

@Suite("Migrator", .timeLimit(.minutes(30)))
struct MigratorTests {
    let migrations = [
        Migration(version: 1, name: "first", sql: "CREATE TABLE t1 (id int PRIMARY KEY); INSERT INTO t1 VALUES (1);"),
        Migration(
            version: 2, name: "second",
            sql: """
                -- a comment; with a semicolon
                CREATE FUNCTION f() RETURNS int LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$;
                INSERT INTO t1 VALUES (2); /* ; */ INSERT INTO t1 VALUES (3)
                """),
    ]

    func withEmptyDatabase(_ body: @Sendable (PostgresClient) async throws -> Void) async throws {
        let url = try await TestPostgres.shared.createEmptyDatabase()
        do {
            try await TestPostgres.withClient(url) { client in try await body(client) }
            try await TestPostgres.shared.dropDatabase(url)
        } catch {
            try? await TestPostgres.shared.dropDatabase(url)
            throw error
        }
    }

    func count(_ client: PostgresClient) async throws -> Int {
        let rows = try await client.query("SELECT count(*) FROM t1")
        for try await count in rows.decode(Int.self) { return count }
        return -1
    }

    @Test("a fresh database gets every migration in order; a re-run is a no-op")
    func freshAndRerun() async throws {
        try await withEmptyDatabase { client in
            let migrator = try Migrator(client: client, migrations: migrations, logger: .init(label: "test"))
            #expect(try await !migrator.isUpToDate())
            let applied = try await migrator.migrate()
            #expect(applied.map(\.version) == [1, 2])
            #expect(try await count(client) == 3)
            #expect(try await migrator.migrate().isEmpty)
            #expect(try await count(client) == 3)
            #expect(try await migrator.isUpToDate())
            #expect(try await migrator.appliedChecksums() == [1: migrations[0].checksum, 2: migrations[1].checksum])
        }
    }

    @Test("migrators started at once apply each migration exactly once")
    func concurrent() async throws {
        try await withEmptyDatabase { client in
            let results = try await withThrowingTaskGroup(of: [Migration].self) { group in
                for _ in 0..<6 {
                    group.addTask {
                        try await Migrator(client: client, migrations: migrations, logger: .init(label: "test")).migrate()
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.flatMap { $0 }.map(\.version).sorted() == [1, 2])
            #expect(try await count(client) == 3)
        }
    }

    @Test("a changed migration file is refused and nothing more is applied")
    func changedChecksum() async throws {
        try await withEmptyDatabase { client in
            try await Migrator(client: client, migrations: [migrations[0]], logger: .init(label: "test")).migrate()
            let edited = Migration(version: 1, name: "first", sql: migrations[0].sql + " -- edited")
            let migrator = try Migrator(client: client, migrations: [edited, migrations[1]], logger: .init(label: "test"))
            await #expect(throws: MigrationError.self) { try await migrator.migrate() }
            do { try await migrator.migrate() } catch let error as MigrationError { #expect(error.code == .checksumMismatch) }
            #expect(try await count(client) == 1)
        }
    }

    @Test("a failing migration rolls back entirely and is not recorded")
    func failing() async throws {
        try await withEmptyDatabase { client in
            let broken = Migration(version: 3, name: "broken", sql: "INSERT INTO t1 VALUES (10); INSERT INTO nowhere VALUES (1);")
            let migrator = try Migrator(client: client, migrations: migrations + [broken], logger: .init(label: "test"))
            do {
                try await migrator.migrate()
                Issue.record("the broken migration was applied")
            } catch let error as MigrationError {
                #expect(error.code == .statementFailed)
                #expect(error.message.contains("nowhere"))
            }
            #expect(try await count(client) == 3)
            #expect(try await migrator.appliedChecksums().keys.sorted() == [1, 2])
        }
    }

    @Test("a database that takes no writes is refused with what to do, before anything is written (not PostgreSQL's bare read_only_sql_transaction)")
    func readOnly() async throws {
        let url = try await TestPostgres.shared.createEmptyDatabase()
        do {
            try await TestPostgres.withClient(url) { client in
                try await client.query("DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET default_transaction_read_only = on', current_database()); END $$")
            }
            // A new client: the setting applies to sessions that start after it.
            try await TestPostgres.withClient(url) { client in
                let migrator = try Migrator(client: client, migrations: migrations, logger: .init(label: "test"))
                do {
                    try await migrator.migrate()
                    Issue.record("a read-only database was migrated")
                } catch let error as MigrationError {
                    #expect(error.code == .readOnly)
                    #expect(error.message.contains("read-only"))
                }
            }
            try await TestPostgres.shared.dropDatabase(url)
        } catch {
            try? await TestPostgres.shared.dropDatabase(url)
            throw error
        }
    }

    @Test("a database migrated by a newer build is refused")
    func unknownMigration() async throws {
        try await withEmptyDatabase { client in
            try await Migrator(client: client, migrations: migrations, logger: .init(label: "test")).migrate()
            let older = try Migrator(client: client, migrations: [migrations[0]], logger: .init(label: "test"))
            do {
                try await older.migrate()
                Issue.record("an older build migrated a newer database")
            } catch let error as MigrationError {
                #expect(error.code == .unknownMigration)
            }
        }
    }

    @Test("the bundled migrations load in order and apply to an empty database")
    func bundled() async throws {
        let bundled = try Migration.bundled()
        #expect(bundled.first?.version == 1)
        #expect(bundled.map(\.version) == bundled.map(\.version).sorted())
        try await withEmptyDatabase { client in
            let migrator = try Migrator(client: client, logger: .init(label: "test"))
            #expect(try await migrator.migrate().count == bundled.count)
            #expect(try await migrator.isUpToDate())
        }
    }

    @Test("migration file names are checked")
    func fileNames() throws {
        #expect(try Migration(fileName: "0007_add_things.sql", sql: "").version == 7)
        #expect(try Migration(fileName: "0007_add_things.sql", sql: "").name == "add_things")
        for bad in ["add.sql", "0000_zero.sql", "7-x.sql", "0001_x.txt"] {
            #expect(throws: MigrationError.self) { try Migration(fileName: bad, sql: "") }
        }
    }

    @Test("the shipped migrations compress documents and change events with lz4")
    func lz4() async throws {
        try await TestDatabase.with { db in
            let rows = try await db.client.query(
                """
                SELECT attrelid::regclass::text || '.' || attname, attcompression::text FROM pg_attribute
                WHERE (attrelid = 'psync_objects'::regclass AND attname = 'body')
                   OR (attrelid = 'psync_events'::regclass AND attname IN ('before', 'after'))
                ORDER BY 1
                """, logger: db.logger)
            var methods: [String: String] = [:]
            for try await (column, method) in rows.decode((String, String).self) { methods[column] = method }
            #expect(methods == ["psync_events.after": "l", "psync_events.before": "l", "psync_objects.body": "l"])
        }
    }
}
