import ArgumentParser
import EmbeddedPostgres
import Foundation
import Logging
import PostgresNIO
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting

#if canImport(Glibc)
import Glibc
#endif

/// What every scenario runs against: a database, a `psync serve` process on it, and a
/// postgres-nio client on the same database for seeding and for the floors.
final class BenchEnvironment: Sendable {
    let database: DatabaseURL
    let client: PostgresClient
    /// The streaming replica the server reads pages from (`--replica`), if any.
    let replica: DatabaseURL?
    let server: ServerProcess
    let store: ObjectStore
    let tokens: TokenIssuer
    let logger: Logger
    /// The run's scratch folder (on the database's machine for the embedded cluster).
    let folder: String

    private init(
        database: DatabaseURL, client: PostgresClient, replica: DatabaseURL?, server: ServerProcess, tokens: TokenIssuer, logger: Logger,
        folder: String
    ) {
        self.folder = folder
        self.database = database
        self.replica = replica
        self.client = client
        self.server = server
        self.store = ObjectStore(client: client, logger: logger)
        self.tokens = tokens
        self.logger = logger
    }

    /// Sets everything up, runs `body`, and tears everything down again, also on errors.
    static func with(_ options: BenchOptions, _ body: @Sendable (BenchEnvironment) async throws -> Void) async throws {
        let executable = options.psync ?? executableNextToThisOne("psync")
        guard FileManager.default.isExecutableFile(atPath: executable) else {
            // `swift run psync-bench` builds psync-bench alone: say in one sentence what to run.
            let build = executable.contains("/release/") ? "swift build -c release --product psync" : "swift build --product psync"
            FileHandle.standardError.write(Data("psync-bench: there is no psync server at \(executable); build it first with `\(build)` (or pass --psync PATH)\n".utf8))
            throw ExitCode(2)
        }
        var logger = Logger(label: "psync.bench")
        logger.logLevel = ProcessInfo.processInfo.environment["LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .error
        let descriptors = raiseFileDescriptorLimit()
        progress("file descriptors: \(descriptors)")

        let folder = options.keep ?? (NSTemporaryDirectory() + "psync-bench-\(getpid())")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var embedded: EmbeddedPostgres?
        var admin: DatabaseURL?
        let database: DatabaseURL
        if let given = options.databaseURL ?? ProcessInfo.processInfo.environment["DATABASE_URL"] {
            let url = try DatabaseURL(given)
            let name = "psync_bench_\(getpid())"
            try await execute(on: url, "CREATE DATABASE \(name)", logger: logger)
            admin = url
            database = url.with(database: name)
            progress("database \(name) on \(url.host):\(url.port)")
        } else {
            // Durable, as `psync serve` runs it: commits wait for the WAL flush.
            // With a replica, both count their functions' calls: which served the pages.
            let settings = ["max_connections": "200"].merging(options.replica ? ["track_functions": "all"] : [:]) { $1 }
            let cluster = EmbeddedPostgres(configuration: .init(dataDirectory: folder + "/postgres", settings: settings), logger: logger)
            progress("starting an embedded PostgreSQL in \(folder)/postgres")
            database = try DatabaseURL(try await cluster.start().url)
            embedded = cluster
        }
        var standby: EmbeddedPostgres?
        defer {
            standby?.stopNow()
            embedded?.stopNow()
            if options.keep == nil { try? FileManager.default.removeItem(atPath: folder) }
        }
        var replica: DatabaseURL?
        if options.replica {
            guard let embedded else { throw BenchError("--replica starts a replica of the embedded cluster: leave out --database-url") }
            progress("starting a streaming replica in \(folder)/replica")
            // Stopped by the defer above even when it fails to start.
            let cluster = try await embedded.standby(in: folder + "/replica", settings: ["hot_standby_feedback": "on"])
            standby = cluster
            replica = try DatabaseURL(try await cluster.start().url)
        }

        var configuration = database.clientConfiguration
        configuration.options.maximumConnections = 64
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let clientTask = Task { await client.run() }
        defer { clientTask.cancel() }
        try await Migrator(client: client, logger: logger).migrate()

        let server = try ServerProcess(
            database: database,
            environment: [
                "LOG_LEVEL": "warning", "PSYNC_IDLE_TIMEOUT": "600", "PSYNC_DB_POOL": "\(options.serverPool)",
                "PSYNC_ACCESS_TOKEN_TTL": "3600", "PSYNC_METRICS_PUBLIC": "true",
                "PSYNC_REPLICA_URLS": replica?.urlString ?? "", "PSYNC_REPLICA_POLL_MS": "100",
                // `fanout --members` beyond RChat's default 2,000 members in a room.
                "RCHAT_MAX_MEMBERS": "20000",
            ],
            executable: executable)
        progress("starting \(server.executablePath) on port \(server.port) (log: \(server.logPath))")
        let cluster = embedded
        let keep = options.keep != nil
        let interruption = Interruption { [server] in
            if let pid = server.processIdentifier { kill(pid, SIGKILL) }
            cluster?.stopNow()
            if !keep { try? FileManager.default.removeItem(atPath: folder) }
        }
        defer { interruption.cancel() }
        try await server.start(timeout: .seconds(60))
        let environment = BenchEnvironment(
            database: database, client: client, replica: replica, server: server,
            tokens: try await TokenIssuer(secret: TestServer.jwtSecret, lifetime: .seconds(3600)), logger: logger, folder: folder)
        do {
            if replica != nil { try await environment.waitForReplica() }
            try await body(environment)
        } catch {
            await server.stop()
            if let admin { try? await execute(on: admin, "DROP DATABASE IF EXISTS \(database.database) WITH (FORCE)", logger: logger) }
            throw error
        }
        await server.stop()
        if let admin { try? await execute(on: admin, "DROP DATABASE IF EXISTS \(database.database) WITH (FORCE)", logger: logger) }
    }

    /// Prints a scenario's result as one JSON line on stdout.
    func report(_ result: JSONValue) {
        FileHandle.standardOutput.write(Data((result.jsonString + "\n").utf8))
    }

    // MARK: The server process

    /// The server's resident memory now, in bytes.
    func serverRSS() -> Int {
        guard let pid = server.processIdentifier else { return 0 }
        return ProcessStatus.bytes("VmRSS", of: pid) ?? 0
    }

    /// The server's anonymous resident memory (`RssAnon`): its heap and stacks, without the
    /// pages of its binary and libraries.
    func serverAnonymousRSS() -> Int {
        guard let pid = server.processIdentifier else { return 0 }
        return ProcessStatus.bytes("RssAnon", of: pid) ?? 0
    }

    /// A sum of the server's metric `name` (the samples whose labels contain `labels`), from /metrics.
    func serverMetric(_ name: String, labels: String = "") async throws -> Double {
        Self.metric(name, labels: labels, in: try await server.http.get("/metrics").text) ?? 0
    }

    /// The sum of the samples of `name` whose labels contain `labels` in Prometheus' text
    /// format; `nil` when there is none.
    static func metric(_ name: String, labels: String = "", in text: String) -> Double? {
        var sum: Double?
        for line in text.split(separator: "\n") where line.hasPrefix(name + "{") || line.hasPrefix(name + " ") {
            guard labels.isEmpty || line.contains(labels), let value = line.split(separator: " ").last.flatMap({ Double($0) }) else { continue }
            sum = (sum ?? 0) + value
        }
        return sum
    }

    /// Waits until the server has the replica in use (`--replica`).
    func waitForReplica(timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if try await serverMetric("psync_replica_in_use") >= 1 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw BenchError("the server did not take the replica in use within \(timeout)")
    }

    /// Calls of `function` in `pg_stat_user_functions` on `url`'s server (statistics a backend
    /// reports when it goes idle, within a second or, at the latest, ten).
    func functionCalls(_ function: String, on url: DatabaseURL) async throws -> Int {
        var configuration = url.clientConfiguration
        configuration.options.maximumConnections = 1
        let statistics = PostgresClient(configuration: configuration, backgroundLogger: logger)
        let running = Task { await statistics.run() }
        defer { running.cancel() }
        let rows = try await statistics.query(
            "SELECT coalesce(sum(calls), 0)::bigint FROM pg_stat_user_functions WHERE funcname = \(function)", logger: logger)
        for try await calls in rows.decode(Int64.self) { return Int(calls) }
        return 0
    }

    /// Waits until every trigger has passed every event written so far.
    func waitForTriggers(timeout: Duration = .seconds(600)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let rows = try await client.query(
                """
                SELECT (SELECT count(*) FROM psync_events WHERE seq IS NULL)
                     + coalesce((SELECT max(s.last_seq - t.position) FROM psync_triggers t, psync_sequencer s), 0)
                """, logger: logger)
            for try await behind in rows.decode(Int64.self) where behind <= 0 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw BenchError("the triggers did not catch up within \(timeout)")
    }

    /// Waits until RChat's unread-count trigger has counted every message written so far.
    func waitForUnreadCounts(timeout: Duration = .seconds(120)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            let rows = try await client.query(
                """
                SELECT (SELECT count(*) FROM psync_events WHERE seq IS NULL AND collection = 'ChatMessage')
                     + coalesce((SELECT max(seq) FROM psync_events WHERE collection = 'ChatMessage'), 0)
                     - coalesce((SELECT position FROM psync_triggers WHERE name = 'rchat.unread-counts'), 0)
                """, logger: logger)
            for try await behind in rows.decode(Int64.self) where behind <= 0 { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw BenchError("the unread counts did not catch up within \(timeout)")
    }

    /// The database's current WAL insert position, in bytes.
    func walPosition() async throws -> Int {
        let rows = try await client.query("SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')::bigint", logger: logger)
        for try await position in rows.decode(Int64.self) { return Int(position) }
        return 0
    }

    // MARK: Helpers

    private static func execute(on url: DatabaseURL, _ sql: String, logger: Logger) async throws {
        let connection = try await PostgresConnection.connect(configuration: url.connectionConfiguration(), id: 1, logger: logger)
        defer { Task { try? await connection.close() } }
        try await connection.query(PostgresQuery(unsafeSQL: sql), logger: logger)
    }

    private static func executableNextToThisOne(_ name: String) -> String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// Raises the soft limit of open files to the hard limit (the server process inherits
    /// it); returns the limit now.
    static func raiseFileDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        limit.rlim_cur = limit.rlim_max
        _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        return Int(limit.rlim_cur)
    }
}

/// Progress for the person running the benchmark, on stderr.
func progress(_ text: String) {
    FileHandle.standardError.write(Data(("[psync-bench] " + text + "\n").utf8))
}

struct BenchError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
