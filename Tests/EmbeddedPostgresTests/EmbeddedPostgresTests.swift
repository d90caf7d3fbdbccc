@testable import EmbeddedPostgres
import Foundation
import Logging
import PostgresNIO
import SyncStorage
import SyncTesting
import Testing

@Suite("Embedded PostgreSQL", .timeLimit(.minutes(8)))
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

    @Test("a cluster left running by a dead process is taken over")
    func leftRunning() async throws {
        let directory = NSTemporaryDirectory() + "psync-embedded-test-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let configuration = EmbeddedPostgresConfiguration(dataDirectory: directory + "/data", durable: false)
        let orphan = EmbeddedPostgres(configuration: configuration, logger: Logger(label: "test"))
        _ = try await orphan.start()
        // A new owner of the same directory, as after a crash of the first process.
        let owner = EmbeddedPostgres(configuration: configuration, logger: Logger(label: "test"))
        let endpoint = try await owner.start()
        #expect(try await query(endpoint, "SELECT 'ok'") == ["ok"])
        try await owner.stop()
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
        let directory = NSTemporaryDirectory() + "psync-none-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: directory) }
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
