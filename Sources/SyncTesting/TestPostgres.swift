import EmbeddedPostgres
import Foundation
import Logging
import PostgresNIO
import SyncStorage

/// The PostgreSQL server of a test run: with `DATABASE_URL` set, that server; otherwise one
/// embedded cluster per test process, started on first use (durability off) and removed
/// when the process exits. Every test gets a database of its own, cloned from a migrated
/// template, so suites run in parallel.
public actor TestPostgres {
    public static let shared = TestPostgres()

    // Tasks, not values: the actor is reentrant across `await`, and concurrent tests must
    // share one cluster and one template rather than each start their own.
    private var admin: Task<DatabaseURL, any Error>?
    private var template: Task<String, any Error>?
    private let logger = TestPostgres.makeLogger("psync.test.postgres")

    /// A logger for tests: level from `PSYNC_TEST_LOG_LEVEL`, default `error`, so a passing run stays quiet.
    public static func makeLogger(_ label: String) -> Logger {
        var logger = Logger(label: label)
        let level = ProcessInfo.processInfo.environment["PSYNC_TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:))
        logger.logLevel = level ?? .error
        return logger
    }

    /// The server's admin URL (its maintenance database), starting the embedded cluster if needed.
    public func adminURL() async throws -> DatabaseURL {
        if let admin { return try await admin.value }
        let task = Task { try await Self.startServer(logger: logger) }
        admin = task
        return try await task.value
    }

    private static func startServer(logger: Logger) async throws -> DatabaseURL {
        if let url = ProcessInfo.processInfo.environment["DATABASE_URL"], !url.isEmpty {
            return try DatabaseURL(url)
        }
        removeAbandonedClusters(logger: logger)
        let directory = NSTemporaryDirectory() + "psync-test-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let postgres = EmbeddedPostgres(
            configuration: .init(
                dataDirectory: directory + "/data", durable: false,
                settings: ["max_connections": "1000", "shared_buffers": "128MB"]),
            logger: logger)
        do {
            let endpoint = try await postgres.start()
            Cleanup.register(postgres, directory: directory)
            return try DatabaseURL(endpoint.url).with(database: "postgres")
        } catch {
            try? FileManager.default.removeItem(atPath: directory)
            throw error
        }
    }

    /// Stops and removes the clusters of earlier test processes that died without cleaning up
    /// (a crash, or a kill): their folder names carry the process id.
    static func removeAbandonedClusters(logger: Logger) {
        let temporary = NSTemporaryDirectory()
        let names = (try? FileManager.default.contentsOfDirectory(atPath: temporary)) ?? []
        for name in names where name.hasPrefix("psync-test-") {
            let parts = name.split(separator: "-")
            guard parts.count == 4, let pid = Int32(parts[2]), pid != getpid() else { continue }
            if kill(pid, 0) == 0 || errno == EPERM { continue }  // still running
            logger.info("removing an abandoned test cluster", metadata: ["directory": "\(name)"])
            EmbeddedPostgres.stopAbandoned(dataDirectory: temporary + name + "/data")
            try? FileManager.default.removeItem(atPath: temporary + name)
        }
    }

    /// Creates a fresh, migrated database and returns its URL.
    public func createDatabase() async throws -> DatabaseURL {
        let admin = try await adminURL()
        let template = try await migratedTemplate(admin: admin)
        let name = "psync_t_\(UInt64.random(in: 0...UInt64.max) & 0xFFFF_FFFF_FFFF)"
        try await Self.execute(on: admin, logger: logger, "CREATE DATABASE \(identifier: name) TEMPLATE \(identifier: template)")
        let url = admin.with(database: name)
        // A clone carries its template's epoch; each test database is a database of its own.
        try await Self.execute(on: url, logger: logger, "UPDATE psync_meta SET epoch = gen_random_uuid()")
        return url
    }

    /// Drops a database made by ``createDatabase()``, closing its connections.
    public func dropDatabase(_ url: DatabaseURL) async throws {
        let admin = try await adminURL()
        try await Self.execute(on: admin, logger: logger, "DROP DATABASE IF EXISTS \(identifier: url.database) WITH (FORCE)")
    }

    /// Creates an empty database (no migrations), for migrator tests.
    public func createEmptyDatabase() async throws -> DatabaseURL {
        let admin = try await adminURL()
        let name = "psync_e_\(UInt64.random(in: 0...UInt64.max) & 0xFFFF_FFFF_FFFF)"
        try await Self.execute(on: admin, logger: logger, "CREATE DATABASE \(identifier: name)")
        return admin.with(database: name)
    }

    /// The template database, migrated once per set of migrations (named after their checksums).
    private func migratedTemplate(admin: DatabaseURL) async throws -> String {
        if let template { return try await template.value }
        let task = Task { try await Self.buildTemplate(admin: admin, logger: logger) }
        template = task
        return try await task.value
    }

    private static func buildTemplate(admin: DatabaseURL, logger: Logger) async throws -> String {
        let migrations = try Migration.bundled()
        let digest = migrations.map(\.checksum).joined().utf8.reduce(UInt64(14_695_981_039_346_656_037)) {
            ($0 ^ UInt64($1)) &* 1_099_511_628_211
        }
        let name = "psync_tpl_\(String(digest, radix: 16))"
        let exists = try await withClient(admin, logger: logger) { client in
            let rows = try await client.query("SELECT 1 FROM pg_database WHERE datname = \(name)", logger: logger)
            for try await _ in rows { return true }
            return false
        }
        if !exists {
            let building = name + "_\(getpid())"
            try await Self.execute(on: admin, logger: logger, "CREATE DATABASE \(identifier: building)")
            try await Self.withClient(admin.with(database: building), logger: logger) { client in
                try await Migrator(client: client, migrations: migrations, logger: logger).migrate()
            }
            do {
                try await Self.execute(on: admin, logger: logger, "ALTER DATABASE \(identifier: building) RENAME TO \(identifier: name)")
            } catch {
                // Another test process built the same template first.
                try await Self.execute(on: admin, logger: logger, "DROP DATABASE IF EXISTS \(identifier: building)")
            }
        }
        return name
    }

    static func execute(on url: DatabaseURL, logger: Logger, _ query: PostgresQuery) async throws {
        try await withClient(url, logger: logger) { client in
            try await client.query(query, logger: logger)
        }
    }

    /// Runs `body` with a client for `url`, closing the client afterwards.
    @discardableResult
    public static func withClient<Result: Sendable>(
        _ url: DatabaseURL, logger: Logger = TestPostgres.makeLogger("psync.test"),
        maximumConnections: Int = 20,
        _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        var configuration = url.clientConfiguration
        configuration.options.maximumConnections = maximumConnections
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await client.run() }
            do {
                let result = try await body(client)
                group.cancelAll()
                return result
            } catch {
                group.cancelAll()
                throw error
            }
        }
    }
}

/// Stops the embedded cluster and removes its directory when the test process exits.
private enum Cleanup {
    nonisolated(unsafe) static var registered: [(EmbeddedPostgres, String)] = []

    static func register(_ postgres: EmbeddedPostgres, directory: String) {
        // Only called from the TestPostgres actor, once per process.
        registered.append((postgres, directory))
        if registered.count == 1 {
            atexit {
                for (postgres, directory) in Cleanup.registered {
                    postgres.stopNow()
                    try? FileManager.default.removeItem(atPath: directory)
                }
            }
        }
    }
}

extension PostgresQuery.StringInterpolation {
    /// Splices an identifier made by the harness itself (never user input).
    mutating func appendInterpolation(identifier: String) {
        precondition(identifier.utf8.allSatisfy { $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x61...0x7A).contains($0) })
        appendInterpolation(unescaped: identifier)
    }
}
