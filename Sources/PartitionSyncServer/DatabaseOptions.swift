import ArgumentParser
import EmbeddedPostgres
import Foundation
import Logging
import PartitionSync
import PostgresNIO
import SyncStorage

/// Where the database is: `DATABASE_URL`, or an embedded PostgreSQL in a data directory.
struct DatabaseOptions: ParsableArguments {
    @Option(name: .customLong("database-url"), help: "PostgreSQL URL (env DATABASE_URL). Without it an embedded PostgreSQL is started.")
    var databaseURLOption: String?

    var databaseURL: String? {
        databaseURLOption ?? ProcessInfo.processInfo.environment["DATABASE_URL"].flatMap { $0.isEmpty ? nil : $0 }
    }

    @Option(name: .customLong("data-dir"), help: "Data directory of the embedded PostgreSQL (env PSYNC_DATA_DIR).")
    var dataDirectory: String = ProcessInfo.processInfo.environment["PSYNC_DATA_DIR"] ?? ".psync-data/postgres"

    @Option(name: .customLong("max-connections"), help: "Size of the PostgreSQL connection pool (env PSYNC_DB_POOL).")
    var maximumConnections: Int = EnvironmentDefault.value("PSYNC_DB_POOL", default: 20)

    @Option(name: .customLong("db-keepalive"), help: "Seconds between checks of an idle pooled connection, 0 for none (env PSYNC_DB_KEEPALIVE).")
    var keepAliveSeconds: Int = EnvironmentDefault.value("PSYNC_DB_KEEPALIVE", default: 10)

    @Option(name: .customLong("db-idle-timeout"), help: "Seconds a pooled connection may go unused before it is closed (env PSYNC_DB_IDLE_TIMEOUT).")
    var idleTimeoutSeconds: Int = EnvironmentDefault.value("PSYNC_DB_IDLE_TIMEOUT", default: 15)

    @Option(name: .customLong("db-statement-bytes"), help: "Bytes of objects and events one write statement carries (a trigger's many-partition apply holds four times this of bodies at a time); a connection that carried four times this is closed after its transaction (env PSYNC_DB_STATEMENT_BYTES).")
    var statementBytes: Int = EnvironmentDefault.value("PSYNC_DB_STATEMENT_BYTES", default: 1 << 20)

    @Option(name: .customLong("db-counters-per-object"), help: "Raised counters an object keeps beside its body before its body is written whole with them, 0 to write every raise into the body (env PSYNC_DB_COUNTERS_PER_OBJECT).")
    var countersPerObject: Int = EnvironmentDefault.value("PSYNC_DB_COUNTERS_PER_OBJECT", default: 32)

    @Option(name: .customLong("db-connect-timeout"), help: "Seconds a command other than serve (which waits for its database as long as it takes) tries to connect before it gives up, saying why; 0 for one try (env PSYNC_DB_CONNECT_TIMEOUT).")
    var connectTimeout: Int = EnvironmentDefault.value("PSYNC_DB_CONNECT_TIMEOUT", default: 30)

    func validate() throws {
        // Read here for its check: the command's logger reads it after the validation.
        _ = EnvironmentDefault.logLevel("LOG_LEVEL")
        try EnvironmentDefault.check()
        try OptionBounds.check([
            OptionBounds("--max-connections", env: "PSYNC_DB_POOL", maximumConnections, 1...10_000),
            OptionBounds("--db-keepalive", env: "PSYNC_DB_KEEPALIVE", keepAliveSeconds, atLeast: 0),
            OptionBounds("--db-idle-timeout", env: "PSYNC_DB_IDLE_TIMEOUT", idleTimeoutSeconds, atLeast: 1),
            OptionBounds("--db-statement-bytes", env: "PSYNC_DB_STATEMENT_BYTES", statementBytes, atLeast: 1_024),
            OptionBounds("--db-counters-per-object", env: "PSYNC_DB_COUNTERS_PER_OBJECT", countersPerObject, 0...1_000),
            OptionBounds("--db-connect-timeout", env: "PSYNC_DB_CONNECT_TIMEOUT", connectTimeout, atLeast: 0),
        ])
    }

    /// The database URL, starting the embedded PostgreSQL first when no URL is configured.
    func resolve(logger: Logger) async throws -> (url: DatabaseURL, embedded: EmbeddedPostgres?) {
        if let databaseURL {
            return (try DatabaseURL(databaseURL), nil)
        }
        let embedded = EmbeddedPostgres(configuration: .init(dataDirectory: dataDirectory), logger: logger)
        let endpoint = try await embedded.start()
        return (try DatabaseURL(endpoint.url), embedded)
    }

    /// Like ``withClient(logger:_:)``, after applying the migrations.
    func withMigratedClient<Result: Sendable>(
        logger: Logger, _ body: @Sendable @escaping (PostgresClient) async throws -> Result
    ) async throws -> Result {
        try await withClient(logger: logger) { client in
            try await Migrator(client: client, logger: logger).migrate()
            return try await body(client)
        }
    }

    /// The JWT secret of an embedded database: made once and kept in its data directory
    /// (mode 0600), so tokens survive restarts in development. `nil` with `DATABASE_URL`.
    func persistentJWTSecret(embedded: Bool, logger: Logger) throws -> String? {
        guard embedded else { return nil }
        let path = URL(fileURLWithPath: dataDirectory).deletingLastPathComponent().appendingPathComponent("jwt-secret").path
        if let secret = try? String(contentsOfFile: path, encoding: .utf8), secret.utf8.count >= 32 {
            return secret.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var generator = SystemRandomNumberGenerator()
        let secret = (0..<48).map { _ in String(UInt8.random(in: 0...255, using: &generator), radix: 16) }.joined()
        _ = FileManager.default.createFile(atPath: path, contents: Data(secret.utf8), attributes: [.posixPermissions: 0o600])
        logger.info("made a JWT secret for the embedded database", metadata: ["path": "\(path)"])
        return secret
    }

    /// Runs `body` with a running client, then closes it and stops the embedded PostgreSQL if one was started.
    func withClient<Result: Sendable>(
        logger: Logger, _ body: @Sendable (PostgresClient) async throws -> Result
    ) async throws -> Result {
        let (url, embedded) = try await resolve(logger: logger)
        logger.info("database", metadata: ["url": "\(url)"])
        do {
            try await DatabaseReachability(url: url, patience: .upTo(.seconds(connectTimeout))).wait(logger: logger)
        } catch {
            try? await embedded?.stop()
            throw error
        }
        var configuration = url.clientConfiguration
        configuration.options.maximumConnections = maximumConnections
        // The pool's own chatter (a lease asked for before `run()` has started, say) is not an
        // operator's concern in a command that runs for a moment, unless they ask for debugging.
        var background = logger
        if background.logLevel > .debug { background.logLevel = .error }
        let client = PostgresClient(configuration: configuration, backgroundLogger: background)
        do {
            let result = try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                defer { group.cancelAll() }
                return try await body(client)
            }
            try await embedded?.stop()
            return result
        } catch {
            try? await embedded?.stop()
            throw error
        }
    }
}
