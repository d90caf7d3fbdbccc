import Foundation
import PartitionSync
import SyncClient
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting

func key(_ collection: String, _ id: String) -> ObjectKey { try! ObjectKey(collection: collection, id: id) }
func path(_ text: String) -> Path { try! Path(parsing: text) }
func partition(_ text: String) -> Partition { try! Partition(text) }

/// A client with its store in a temporary file, removed with `cleanUp()`.
struct ClientHarness {
    let directory: String

    init() {
        directory = NSTemporaryDirectory() + "psync-client-\(UUID().uuidString)"
    }

    func client(
        _ baseURL: String, store name: String = "store", pingInterval: Duration = .seconds(20), pongTimeout: Duration = .seconds(10)
    ) throws -> SyncClient {
        var configuration = SyncClientConfiguration(serverURL: URL(string: baseURL)!, storePath: directory + "/\(name).sqlite")
        configuration.pingInterval = pingInterval
        configuration.pongTimeout = pongTimeout
        configuration.reconnectDelay = .milliseconds(50)
        configuration.maximumReconnectDelay = .milliseconds(500)
        configuration.logger = TestPostgres.makeLogger("psync.test.client")
        return try SyncClient(configuration: configuration)
    }

    func cleanUp() {
        try? FileManager.default.removeItem(atPath: directory)
    }

    /// Runs `body` while the client's connection loop runs.
    static func running<Result: Sendable>(_ client: SyncClient, _ body: @Sendable () async throws -> Result) async throws -> Result {
        let connection = Task { await client.run() }
        do {
            let result = try await body()
            connection.cancel()
            await connection.value
            return result
        } catch {
            connection.cancel()
            await connection.value
            throw error
        }
    }
}

/// A signed-in RChat user on a real `psync serve` process, its client running and its User
/// record arrived.
struct SignedInUser: Sendable {
    let database: TestDatabase
    let server: ServerProcess
    let client: SyncClient
    let userID: String
    var partition: Partition { try! Partition(key: "user", value: userID) }
    var userKey: ObjectKey { key("User", userID) }
}

extension ClientHarness {
    /// Runs `body` with a user signed in on a real `psync serve` process (the RChat
    /// application, so it can be killed and started again), exclusively of other database tests.
    static func withSignedInUser(
        pingInterval: Duration = .seconds(20), pongTimeout: Duration = .seconds(10),
        _ body: @escaping @Sendable (SignedInUser) async throws -> Void
    ) async throws {
        let harness = ClientHarness()
        defer { harness.cleanUp() }
        try await TestDatabase.with(exclusive: true) { db in
            let server = try ServerProcess(database: db.url)
            try await server.start()
            let client = try harness.client(server.baseURL, pingInterval: pingInterval, pongTimeout: pongTimeout)
            let userID = try await client.register(email: "ann@example.com", password: "correct horse")
            let user = SignedInUser(database: db, server: server, client: client, userID: userID)
            do {
                try await ClientHarness.running(client) {
                    let handle = try await client.open(user.partition)
                    for await snapshot in await handle.updates() where !snapshot.objects.isEmpty { break }
                    try await body(user)
                }
            } catch {
                await server.stop()
                throw error
            }
            await server.stop()
        }
    }
}

extension ClientHarness {
    /// Runs `body` with Ann's running client, signed up on an in-process server with
    /// ``SharedRules``, and her user id.
    static func withAnn(_ body: @escaping @Sendable (TestDatabase, SyncClient, String) async throws -> Void) async throws {
        let harness = ClientHarness()
        defer { harness.cleanUp() }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: SharedRules.permissions) { server in
                let client = try harness.client(server.baseURL)
                let userID = try await client.register(email: "ann@example.com", password: "correct horse")
                try await ClientHarness.running(client) { try await body(db, client, userID) }
            }
        }
    }
}

/// A rule set where `shared=*` partitions are open to every user, and `user=<id>` is its user's.
enum SharedRules {
    static var permissions: Permissions {
        var permissions = Permissions()
        permissions.register(OwnerRule(), for: PartitionKind("user"))
        permissions.register(
            ClosureRule(read: { principal, _, _ in principal.userID != nil }, write: { principal, _, _ in principal.userID != nil }),
            for: PartitionKind("shared"))
        return permissions
    }
}
