@testable import EmbeddedPostgres
import Foundation
import Locking
import Logging
import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

@Suite("Embedded PostgreSQL", .timeLimit(.minutes(30)))
struct EmbeddedPostgresTests {
    func query(_ endpoint: EmbeddedPostgresEndpoint, _ sql: PostgresQuery) async throws -> [String] {
        try await TestPostgres.withClient(try DatabaseURL(endpoint.url)) { client in
            var values: [String] = []
            for try await value in try await client.query(sql).decode(String.self) { values.append(value) }
            return values
        }
    }

    @Test("a cluster is initialized once, started on a free port, and keeps its data across restarts")
    func lifecycle() async throws {
        let directory = NSTemporaryDirectory() + "psync-embedded-test-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = EmbeddedPostgresConfiguration(dataDirectory: directory + "/data", database: "app", durable: false)
        let first = EmbeddedPostgres(configuration: configuration, logger: Logger(label: "test"))
        let endpoint = try await first.start()
        #expect(endpoint.host == "127.0.0.1")
        #expect(endpoint.database == "app")
        #expect(try await first.start() == endpoint)  // starting again is a no-op
        _ = try await query(endpoint, "CREATE TABLE kept (v text)")
        _ = try await query(endpoint, "INSERT INTO kept VALUES ('still here')")
        try await first.stop()
        #expect(first.endpoint == nil)

        let second = EmbeddedPostgres(configuration: configuration, logger: Logger(label: "test"))
        let again = try await second.start()
        #expect(try await query(again, "SELECT v FROM kept") == ["still here"])
        #expect(try await query(again, "SELECT current_setting('listen_addresses')") == ["127.0.0.1"])
        second.stopNow()
        #expect(!FileManager.default.fileExists(atPath: directory + "/data/postmaster.pid"))
    }

    @Test("a cluster left running by a process that no longer uses it is used, and stopped by its last user")
    func leftRunning() async throws {
        let directory = NSTemporaryDirectory() + "psync-embedded-test-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = EmbeddedPostgresConfiguration(dataDirectory: directory + "/data", durable: false)
        let orphan = EmbeddedPostgres(configuration: configuration, logger: Logger(label: "test"))
        let first = try await orphan.start()
        // Its user goes away without stopping it, as a process that died would.
        orphan.detach()
        let owner = EmbeddedPostgres(configuration: configuration, logger: Logger(label: "test"))
        let endpoint = try await owner.start()
        #expect(endpoint.port == first.port)
        #expect(try await query(endpoint, "SELECT 'ok'") == ["ok"])
        try await owner.stop()
        #expect(!owner.isRunning)
        #expect(!FileManager.default.fileExists(atPath: directory + "/data/postmaster.pid"))
    }

    @Test("issue 34, finding 1: a second user shares the running cluster; it stops when its last user does, in either order")
    func shared() async throws {
        let directory = NSTemporaryDirectory() + "psync-embedded-test-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = EmbeddedPostgresConfiguration(dataDirectory: directory + "/data", durable: false)
        for secondStopsFirst in [true, false] {
            let server = EmbeddedPostgres(configuration: configuration, logger: Logger(label: "test"))
            let endpoint = try await server.start()
            let command = EmbeddedPostgres(configuration: configuration, logger: Logger(label: "test"))
            #expect(try await command.start() == endpoint)
            let (early, late) = secondStopsFirst ? (command, server) : (server, command)
            try await early.stop()
            // The other user's database is still there.
            #expect(late.isRunning)
            #expect(try await query(endpoint, "SELECT 'still serving'") == ["still serving"])
            try await late.stop()
            #expect(!late.isRunning)
        }
        // A cluster stopped by someone else is no error to stop.
        let server = EmbeddedPostgres(configuration: configuration, logger: Logger(label: "test"))
        _ = try await server.start()
        EmbeddedPostgres.stopAbandoned(dataDirectory: directory + "/data")
        #expect(!server.isRunning)
        try await server.stop()
    }

    @Test("two users starting at once find one cluster")
    func concurrentStarts() async throws {
        let directory = NSTemporaryDirectory() + "psync-embedded-test-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = EmbeddedPostgresConfiguration(dataDirectory: directory + "/data", durable: false)
        let users = (0..<3).map { _ in EmbeddedPostgres(configuration: configuration, logger: Logger(label: "test")) }
        let endpoints = try await withThrowingTaskGroup(of: EmbeddedPostgresEndpoint.self) { group in
            for user in users { group.addTask { try await user.start() } }
            return try await group.reduce(into: [EmbeddedPostgresEndpoint]()) { $0.append($1) }
        }
        #expect(Set(endpoints).count == 1)
        for user in users { try await user.stop() }
        #expect(!users[0].isRunning)
    }

    /// Whether a connection with these credentials is refused for its password
    /// (`28P01` invalid_password), as PostgreSQL answers a client without the right one.
    func refused(_ endpoint: EmbeddedPostgresEndpoint) async -> Bool {
        do {
            let configuration = try DatabaseURL(endpoint.url).connectionConfiguration()
            let connection = try await PostgresConnection.connect(configuration: configuration, id: 1, logger: Logger(label: "test"))
            try? await connection.close()
            return false
        } catch let error as PSQLError {
            // Without a password postgres-nio refuses the server's password request itself;
            // with a wrong one the server answers invalid_password.
            if error.code == .authMechanismRequiresPassword || error.serverInfo?[.sqlState] == "28P01" { return true }
            Issue.record("unexpected \(String(reflecting: error))")
            return false
        } catch {
            Issue.record("unexpected \(String(reflecting: error))")
            return false
        }
    }

    @Test("finding 9: every connection needs the password only the server has; a cluster made with trust gets one")
    func passwordRequired() async throws {
        let directory = NSTemporaryDirectory() + "psync-embedded-test-\(UUID().uuidString)"
        let passwordFile = EmbeddedPostgresConfiguration.passwordFile(of: directory + "/data")
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: passwordFile)
        }
        let configuration = EmbeddedPostgresConfiguration(dataDirectory: directory + "/data", durable: false)
        let postgres = EmbeddedPostgres(configuration: configuration, logger: Logger(label: "test"))
        var endpoint = try await postgres.start()
        let attributes = try FileManager.default.attributesOfItem(atPath: passwordFile)
        #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        #expect(endpoint.password?.count == 64)
        #expect(try await query(endpoint, "SELECT 'in'") == ["in"])
        var stranger = endpoint
        stranger.password = nil
        #expect(await refused(stranger))
        stranger.password = "guess"
        #expect(await refused(stranger))
        try await postgres.stop()

        // A cluster initialized before passwords: trust for everyone, no password file.
        let hba = directory + "/data/pg_hba.conf"
        let trusting = "host all all 127.0.0.1/32 trust\n"
        try trusting.write(toFile: hba, atomically: false, encoding: .utf8)
        try FileManager.default.removeItem(atPath: passwordFile)
        let again = EmbeddedPostgres(configuration: configuration, logger: Logger(label: "test"))
        endpoint = try await again.start()
        #expect(try await query(endpoint, "SELECT 'in'") == ["in"])
        stranger = endpoint
        stranger.password = nil
        #expect(await refused(stranger))
        #expect(try String(contentsOfFile: passwordFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines) == endpoint.password)
        try await again.stop()
    }

    @Test("a pg_hba.conf trusts when a rule, not a comment, says trust")
    func trustRules() {
        let comments = "# METHOD can be \"trust\", \"reject\", \"md5\"\n# CAUTION: local \"trust\" authentication\n#host all all 127.0.0.1/32 trust\n"
        #expect(!EmbeddedPostgres.trusts(hba: comments + "host all all 127.0.0.1/32 scram-sha-256\n"))
        #expect(EmbeddedPostgres.trusts(hba: comments + "host\tall\tall\t127.0.0.1/32\ttrust\n"))
        #expect(EmbeddedPostgres.trusts(hba: nil))
    }

    @Test("a folder without the binaries is a clear error")
    func missingBinaries() async throws {
        // The cluster's files beside its folder (password, users, startup) go with it.
        let directory = TestScratch.file("psync-none")
        let postgres = EmbeddedPostgres(
            configuration: .init(dataDirectory: directory, binDirectory: "/nonexistent/bin"), logger: Logger(label: "test"))
        do {
            try await postgres.start()
            Issue.record("started without binaries")
        } catch let error as EmbeddedPostgresError {
            #expect(error.code == .commandFailed)
            #expect(error.message.contains("/nonexistent/bin/initdb"))
        }
    }
}

/// Issue 34, finding 1: `psync apikey create`, `triggers list` and `migrate` beside a running
/// `psync serve` on the embedded database share its cluster instead of stopping it.
@Suite("Commands beside a running server", .serialized, .timeLimit(.minutes(30)))
struct SharedClusterCommandTests {
    final class Done: Sendable {
        let value = Locked(false)
    }

    static func run(_ arguments: [String], environment: [String: String]) async throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ServerProcess.executable)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = await Task.detached { pipe.fileHandleForReading.readDataToEndOfFile() }.value
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }

    @Test("apikey create, triggers list and migrate while the server takes writes: every write acked, the server serves on and stops its cluster at the end")
    func commandsBesideServer() async throws {
        // Exclusive: no other test's cluster takes the port chosen for the server meanwhile.
        try await TestDatabase.with(exclusive: true) { _ in try await Self.commandsBesideServer() }
    }

    static func commandsBesideServer() async throws {
        let directory = NSTemporaryDirectory() + "psync-shared-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        chmod(directory, 0o755)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let data = directory + "/pg"
        let port = try ServerProcess.freePort()
        let environment = ["PSYNC_BCRYPT_COST": "4", "LOG_LEVEL": "warning", "DATABASE_URL": ""]
        let server = Process()
        server.executableURL = URL(fileURLWithPath: ServerProcess.executable)
        server.arguments = ["serve", "--port", "\(port)", "--data-dir", data]
        server.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let log = directory + "/server.log"
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        server.standardOutput = FileHandle(forWritingAtPath: log)
        server.standardError = FileHandle(forWritingAtPath: log)
        try server.run()
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let http = TestHTTPClient(baseURL: "http://127.0.0.1:\(port)")
        let deadline = ContinuousClock.now + .seconds(120)
        while (try? await http.get("/ready"))?.status != 200 {
            guard ContinuousClock.now < deadline, server.isRunning else {
                Issue.record("the server did not become ready: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        let ann = try await http.register("ann@example.com", password: "correct horse")
        let me = "user%3D\(ann.userID)"
        // The User record is made by a trigger after the registration.
        while try await http.get("/v1/partitions/\(me)/changes", token: ann.accessToken).json?["objects"]?.arrayValue?.isEmpty != false {
            guard ContinuousClock.now < deadline else {
                Issue.record("no User record")
                return
            }
            try await Task.sleep(for: .milliseconds(100))
        }

        // Writes go on while the commands run; each must be acked.
        let done = Done()
        let writer = Task { () -> (acked: Int, failed: [String]) in
            var (acked, failed) = (0, [String]())
            while !done.value.withLock({ $0 }) {
                let name = "Ann \(acked)"
                let response = try await http.post(
                    "/v1/partitions/\(me)/uploads",
                    ["requestId": .string("r-\(acked)"), "operations": [[
                        "op": "set", "collection": "User", "id": .string(ann.userID), "path": "userPreferences.displayName", "value": .string(name),
                    ]]], token: ann.accessToken)
                if response.status == 200, response.json?["type"] == "ack" { acked += 1 } else { failed.append("\(response.status) \(response.text)") }
                if failed.count > 0 { break }
            }
            return (acked, failed)
        }
        for command in [["apikey", "create", "--name", "admin"], ["triggers", "list"], ["migrate"], ["apikey", "list"]] {
            let (status, output) = try await Self.run(command + ["--data-dir", data], environment: environment)
            #expect(status == 0, "psync \(command.joined(separator: " ")): \(output)")
        }
        done.value.withLock { $0 = true }
        let (acked, failed) = try await writer.value
        #expect(failed.isEmpty, "writes failed beside the commands: \(failed)")
        #expect(acked > 0)
        #expect(try await http.get("/ready").status == 200)
        let changes = try await http.get("/v1/partitions/\(me)/changes", token: ann.accessToken)
        #expect(changes.text.contains("\"Ann \(acked - 1)\""), "the last acked write is not stored")

        // SIGTERM: the server, the cluster's last user, stops it, and exits 0.
        server.terminate()
        let stopped = Task.detached { server.waitUntilExit(); return server.terminationStatus }
        #expect(await stopped.value == 0, "\((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        #expect(!FileManager.default.fileExists(atPath: data + "/postmaster.pid"))
        let serverLog = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(!serverLog.contains("terminating connection due to administrator command"))
    }
}
