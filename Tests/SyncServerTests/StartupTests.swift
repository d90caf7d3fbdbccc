import Foundation
import Locking
import PartitionSync
import ServiceLifecycle
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// How `psync serve` starts, and fails to.
@Suite("Server start", .timeLimit(.minutes(30)))
struct StartupTests {
    @Test("a second server on a port in use exits non-zero, and its first line says the port is in use")
    func portInUse() async throws {
        try await TestDatabase.with { db in
            let first = try ServerProcess(database: db.url)
            try await first.start()
            defer { Task { [first] in await first.stop() } }

            let (process, output) = Self.psync(["serve", "--port", "\(first.port)", "--database-url", db.url.urlString])
            try process.run()
            let deadline = ContinuousClock.now + .seconds(60)
            while process.isRunning, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
            if process.isRunning { process.terminate() }
            #expect(!process.isRunning, "the second server is still running")
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            #expect(process.terminationStatus != 0)
            let firstLine = text.split(separator: "\n").first.map(String.init) ?? ""
            #expect(firstLine.contains("\(first.port)") && firstLine.contains("in use"), "first line: \(firstLine)\n\(text.prefix(3000))")
        }
    }

    @Test("an application with a rule for a key no partition can have, or a bad index, does not start, and says which")
    func badApplication() async throws {
        var badKind = TestServer.defaultPermissions
        badKind.register(OwnerRule(), for: PartitionKind("Rooms"))
        let cases: [(SyncApplication, SyncError.Code, String)] = [
            (SyncApplication(permissions: badKind), .invalidPartition, "Rooms"),
            (SyncApplication(permissions: TestServer.defaultPermissions, indexes: [.field(collection: "User", path: "user name")]), .invalidPath, "User at user name"),
        ]
        try await TestDatabase.with { db in
            for (application, code, named) in cases {
                let logger = TestPostgres.makeLogger("psync.test.server")
                let server = SyncServer(configuration: TestServer.defaultConfiguration, database: db.url, application: application, logger: logger)
                let group = ServiceGroup(services: [server], gracefulShutdownSignals: [], logger: logger)
                do {
                    try await group.run()
                    Issue.record("a server of a bad application ran and stopped without an error")
                } catch let error as SyncError {
                    #expect(error.code == code)
                    #expect(error.message.contains(named), "\(error.message)")
                }
            }
        }
    }

    /// The store that creates the application's indexes is the one the server serves with: its
    /// searches read an element index's entries only for the indexes it created. The server
    /// prepared its database with a store of its own, and every member search of its triggers
    /// scanned the whole collection (`psync-bench ingest --conversations 1000`: the unread
    /// trigger ~93 events/s, each search 5–18 ms over 10,000 users).
    @Test("the server's searches read the element indexes it created")
    func elementIndexesServed() async throws {
        let index = ObjectIndex.arrayElements(collection: "Note", path: "tags", field: "id")
        let application = SyncApplication(permissions: TestServer.defaultPermissions, indexes: [index])
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, application: application) { server in
                #expect(server.server.elementIndexNames == [index.name])
            }
        }
    }

    @Test("a numeric environment variable its flag cannot take stops the command with exit code 64, naming the variable and its value, its flag given or not; an empty variable does not")
    func malformedEnvironment() async throws {
        let nowhere = "postgres://nobody@127.0.0.1:1/nothing?sslmode=disable"
        let cases: [(arguments: [String], environment: [String: String], lines: [String])] = [
            (["serve", "--port", "0", "--database-url", nowhere], ["PSYNC_DB_POOL": "twenty"],
             [#"Error: environment variable PSYNC_DB_POOL="twenty" is not an integer"#]),
            (["serve", "--port", "0", "--database-url", nowhere], ["PSYNC_TRIGGER_TIMEOUT": "6o", "PSYNC_BCRYPT_COST": "300"],
             [#"Error: environment variable PSYNC_BCRYPT_COST="300" is not an integer from 0 to 255"#,
              #"environment variable PSYNC_TRIGGER_TIMEOUT="6o" is not an integer"#]),
            (["triggers", "list", "--database-url", nowhere], ["PSYNC_TRIGGER_MAX_LAG": "10k"],
             [#"Error: environment variable PSYNC_TRIGGER_MAX_LAG="10k" is not an integer"#]),
            (["import", "--dry-run", "--database-url", nowhere, "/nonexistent.json"], ["PSYNC_IMPORT_WINDOW_BYTES": "1 MB"],
             [#"Error: environment variable PSYNC_IMPORT_WINDOW_BYTES="1 MB" is not an integer"#]),
            (["serve", "--port", "0", "--database-url", nowhere], ["PSYNC_METRICS_PUBLIC": "maybe"],
             [#"Error: environment variable PSYNC_METRICS_PUBLIC="maybe" is not true or false"#]),
            (["triggers", "list", "--database-url", nowhere], ["LOG_LEVEL": "loud"],
             [#"Error: environment variable LOG_LEVEL="loud" is not a log level (trace, debug, info, notice, warning, error, critical)"#]),
            (["serve", "--port", "0", "--database-url", nowhere, "--log-level", "loud"], [:],
             [#"Error: --log-level is one of trace, debug, info, notice, warning, error, critical, not "loud""#]),
            // Its flag given: the environment is still wrong, and said so.
            (["triggers", "list", "--database-url", nowhere, "--max-lag", "5"], ["PSYNC_TRIGGER_MAX_LAG": "10k"],
             [#"Error: environment variable PSYNC_TRIGGER_MAX_LAG="10k" is not an integer"#]),
            // Empty, or good with spaces: the command goes on (and fails to reach the database).
            (["triggers", "list", "--database-url", nowhere, "--db-connect-timeout", "0"],
             ["PSYNC_DB_POOL": "", "PSYNC_TRIGGER_MAX_LAG": " 5 ", "PSYNC_METRICS_PUBLIC": "Off", "LOG_LEVEL": "ERROR"], []),
        ]
        for (arguments, variables, lines) in cases {
            let (status, text) = try await Self.run(arguments, environment: variables)
            if !lines.isEmpty {
                #expect(status == 64, "\(arguments) \(variables): exit \(status)\n\(text.prefix(2000))")
                for line in lines { #expect(text.contains(line), "\(arguments) \(variables): no \(line)\n\(text.prefix(2000))") }
            } else {
                #expect(status != 64 && !text.contains("environment variable"), "\(arguments) \(variables): exit \(status)\n\(text.prefix(2000))")
            }
        }
    }

    @Test("a numeric option outside its values stops the command with exit code 64, one line naming the option, its variable and its values; a value at each edge is taken")
    func optionBounds() async throws {
        let nowhere = "postgres://nobody@127.0.0.1:1/nothing?sslmode=disable"
        let serve = ["serve", "--port", "0", "--database-url", nowhere]
        let refused: [(arguments: [String], environment: [String: String], lines: [String])] = [
            (serve + ["--trigger-run-events", "100001"], ["PSYNC_STOP_TIMEOUT": "0"],
             ["Error: --trigger-run-events (env PSYNC_TRIGGER_RUN_EVENTS) takes 1 to 100000, not 100001",
              "--stop-timeout (env PSYNC_STOP_TIMEOUT) takes 1 or more, not 0"]),
            (serve + ["--max-queued-replies", "99"], [:], ["Error: --max-queued-replies (env PSYNC_MAX_QUEUED_REPLIES) takes 100 or more, not 99"]),
            (serve + ["--bcrypt-cost", "3"], [:], ["Error: --bcrypt-cost (env PSYNC_BCRYPT_COST) takes 4 to 31, not 3"]),
            (serve + ["--malloc-arenas=-1"], [:], ["Error: --malloc-arenas (env PSYNC_MALLOC_ARENAS) takes 0 to 1024, not -1"]),
            (serve, ["PSYNC_MALLOC_ARENAS": "1025"], ["Error: --malloc-arenas (env PSYNC_MALLOC_ARENAS) takes 0 to 1024, not 1025"]),
            (serve + ["--replica-wait-ms", "10001"], [:], ["Error: --replica-wait-ms (env PSYNC_REPLICA_WAIT_MS) takes 0 to 10000, not 10001"]),
            (serve, ["PSYNC_DB_COUNTERS_PER_OBJECT": "1001"], ["Error: --db-counters-per-object (env PSYNC_DB_COUNTERS_PER_OBJECT) takes 0 to 1000, not 1001"]),
            (serve + ["--verification-code-ttl", "0"], [:], ["Error: --verification-code-ttl (env PSYNC_VERIFICATION_CODE_TTL) takes 1 or more, not 0"]),
            (serve, ["PSYNC_DB_IDLE_TIMEOUT": "0"], ["Error: --db-idle-timeout (env PSYNC_DB_IDLE_TIMEOUT) takes 1 or more, not 0"]),
            (["triggers", "list", "--database-url", nowhere, "--max-lag=-1"], [:], ["Error: --max-lag (env PSYNC_TRIGGER_MAX_LAG) takes 0 or more, not -1"]),
            (["migrate", "--database-url", nowhere, "--db-connect-timeout=-1"], [:],
             ["Error: --db-connect-timeout (env PSYNC_DB_CONNECT_TIMEOUT) takes 0 or more, not -1"]),
        ]
        for (arguments, variables, lines) in refused {
            let (status, text) = try await Self.run(arguments, environment: variables)
            #expect(status == 64, "\(arguments) \(variables): exit \(status)\n\(text.prefix(2000))")
            for line in lines { #expect(text.contains(line), "\(arguments) \(variables): no \(line)\n\(text.prefix(2000))") }
        }
        // Every edge at once is taken: the start goes on to the secret's check, which stops it (78).
        let edges = serve + [
            "--jwt-secret", "short", "--trigger-run-events", "100000", "--stop-timeout", "1", "--max-queued-replies", "100",
            "--bcrypt-cost", "31", "--replica-wait-ms", "0", "--replica-read-timeout-ms", "600000", "--expiry-interval-ms", "10",
            "--db-counters-per-object", "1000", "--max-connections", "1", "--blob-grace", "0", "--malloc-arenas", "1024",
            "--db-idle-timeout", "1",
        ]
        let (status, text) = try await Self.run(edges, environment: ["PSYNC_BCRYPT_COST": "4", "PSYNC_REPLICA_POLL_MS": "10"])
        #expect(status == 78 && text.contains("PSYNC_JWT_SECRET"), "exit \(status)\n\(text.prefix(2000))")
        let (listed, listText) = try await Self.run(["triggers", "list", "--database-url", nowhere, "--max-lag", "0", "--db-connect-timeout", "0"], environment: [:])
        #expect(listed == 1 && listText.contains("cannot connect to the database"), "exit \(listed)\n\(listText.prefix(2000))")
    }

    @Test("a one-shot command whose database cannot be reached gives up after --db-connect-timeout, saying why; one whose database refuses its password says the server's reason")
    func unreachableDatabase() async throws {
        let nowhere = "postgres://nobody@127.0.0.1:1/nothing?sslmode=disable"
        for command in [["migrate"], ["apikey", "list"], ["triggers", "list"]] {
            let (status, text) = try await Self.run(command + ["--database-url", nowhere, "--db-connect-timeout", "1"], environment: [:])
            #expect(status == 1, "\(command): exit \(status)\n\(text.prefix(2000))")
            #expect(text.contains("Error: cannot connect to the database at 127.0.0.1:1 (tried for 1 s, --db-connect-timeout)"), "\(command):\n\(text.prefix(2000))")
            #expect(text.contains("Connection refused"), "\(command):\n\(text.prefix(2000))")
        }
        try await TestDatabase.with { db in
            var wrong = db.url
            wrong.password = "not-the-password"
            let (status, text) = try await Self.run(["apikey", "list", "--database-url", wrong.urlString], environment: ["PSYNC_DB_CONNECT_TIMEOUT": "3600"])
            #expect(status == 1, "exit \(status)\n\(text.prefix(2000))")
            #expect(text.contains("refused the connection: password authentication failed for user"), "\(text.prefix(2000))")
        }
    }

    @Test("serve waits for an unreachable database saying so in one line (not a line per try), and a SIGTERM meanwhile stops it at once with status 0")
    func serveWaitsForTheDatabase() async throws {
        let (process, output) = Self.psync(["serve", "--port", "0", "--database-url", "postgres://nobody@127.0.0.1:1/nothing?sslmode=disable"])
        let (lines, sink) = AsyncStream.makeStream(of: String.self)
        let text = Locked("")
        output.fileHandleForReading.readabilityHandler = { handle in
            let data = handle.availableData
            guard !data.isEmpty else { sink.finish(); return }
            sink.yield(text.withLock { $0 += String(decoding: data, as: UTF8.self); return $0 })
        }
        let exited = AsyncStream.makeStream(of: Int32.self)
        process.terminationHandler = { exited.continuation.yield($0.terminationStatus); exited.continuation.finish() }
        try process.run()
        var waiting = false
        // The pool's own retries (a line per try) end the wait too: that is the failure.
        for await seen in lines where seen.contains("waiting for the database at 127.0.0.1:1") || seen.contains("Connection creation failed") {
            waiting = !seen.contains("Connection creation failed")
            break
        }
        #expect(waiting)
        process.terminate()
        var status: Int32?
        for await code in exited.stream { status = code }
        output.fileHandleForReading.readabilityHandler = nil
        let log = text.withLock { $0 }
        #expect(status == 0, "\(log.prefix(3000))")
        #expect(log.components(separatedBy: "waiting for the database").count == 2, "one line: \(log.prefix(3000))")
        #expect(!log.contains("Connection creation failed") && !log.contains("CancellationError"), "\(log.prefix(3000))")
        #expect(log.contains("stopping before the database answered"), "\(log.prefix(3000))")
    }

    /// `psync` with `arguments`, logging at info into one pipe (standard output and error), not started.
    static func psync(_ arguments: [String]) -> (Process, Pipe) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ServerProcess.executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["PSYNC_JWT_SECRET"] = TestServer.jwtSecret
        environment["LOG_LEVEL"] = "info"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        return (process, output)
    }

    /// Runs `psync` with `arguments` and `environment` over the test's own, to its end: its
    /// exit status and standard error.
    static func run(_ arguments: [String], environment variables: [String: String]) async throws -> (status: Int32, text: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ServerProcess.executable)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["PSYNC_JWT_SECRET"] = TestServer.jwtSecret
        environment.merge(variables) { $1 }
        process.environment = environment
        let output = Pipe()
        process.standardOutput = FileHandle.nullDevice
        process.standardError = output
        process.standardInput = FileHandle.nullDevice
        let status = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do { try process.run() } catch { continuation.resume(throwing: error) }
        }
        return (status, String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
    }
}
