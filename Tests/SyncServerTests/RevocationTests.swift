import Foundation
import PartitionSync
import PostgresNIO
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Deleting an account, logging out and revoking an API key end the holder's access at once,
/// on every instance sharing the database: open sessions close, the tokens are refused.
@Suite("Revocation", .timeLimit(.minutes(30)))
struct RevocationTests {
    @Test("deleting an account on instance A closes its sessions on A and B, and both refuse its token")
    func deletedAccount() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { a in
                try await TestServer.with(database: db.url) { b in
                    let alice = try await a.register("alice@example.com")
                    let mine = partition("user=\(alice.userID)")
                    let onB = try await subscribed(b, alice, to: mine)
                    let onA = try await subscribed(a, alice, to: mine)
                    let path = "/v1/partitions/user%3D\(alice.userID)/changes"
                    #expect(try await b.http.get(path, token: alice.accessToken).status == 200)

                    let deleted = try await a.http.request("DELETE", "/v1/auth/user", body: nil, token: alice.accessToken)
                    #expect(deleted.status == 204)

                    for client in [onA, onB] {
                        try await expectRevoked(client)
                    }
                    for server in [a, b] {
                        let refused = try await server.http.get(path, token: alice.accessToken)
                        #expect(refused.status == 401)
                        #expect(refused.json?["error"]?["code"] == "unauthenticated")
                        #expect(try await upgradeRefused(server, token: alice.accessToken))
                    }
                }
            }
        }
    }

    @Test("logout ends the access tokens and sessions of that login on every instance, not those of another login")
    func logout() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { a in
                try await TestServer.with(database: db.url) { b in
                    let phone = try await a.register("alice@example.com")
                    let laptop = try await a.http.login("alice@example.com", password: "correct horse battery")
                    let mine = partition("user=\(phone.userID)")
                    let phoneOnB = try await subscribed(b, phone, to: mine)
                    let laptopOnB = try await subscribed(b, laptop, to: mine)

                    let out = try await a.http.post("/v1/auth/logout", ["refreshToken": .string(phone.refreshToken)])
                    #expect(out.status == 204)

                    try await expectRevoked(phoneOnB)
                    let path = "/v1/partitions/user%3D\(phone.userID)/changes"
                    for server in [a, b] {
                        #expect(try await server.http.get(path, token: phone.accessToken).status == 401)
                        #expect(try await upgradeRefused(server, token: phone.accessToken))
                        #expect(try await server.http.get(path, token: laptop.accessToken).status == 200)
                    }
                    // The other login's session goes on.
                    laptopOnB.send(.ping(nonce: "still here"))
                    #expect(try await laptopOnB.next { $0 == .pong(nonce: "still here") } == .pong(nonce: "still here"))
                    await laptopOnB.close()
                }
            }
        }
    }

    @Test("revoking an API key closes its sessions on every instance; a key made again under the name works")
    func apiKey() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { a in
                try await TestServer.with(database: db.url) { b in
                    let keys = APIKeys(client: db.client, logger: db.logger)
                    let key = try await keys.create(name: "notifier")
                    var sessions: [TestSyncClient] = []
                    for server in [a, b] {
                        let client = try await server.connect(token: key)
                        #expect(try await client.next() == .ready(userId: "service:notifier"))
                        sessions.append(client)
                    }
                    #expect(try await keys.revoke(name: "notifier"))
                    for client in sessions { try await expectRevoked(client) }
                    for server in [a, b] { #expect(try await upgradeRefused(server, token: key)) }

                    let again = try await keys.create(name: "notifier")
                    let client = try await b.connect(token: again)
                    #expect(try await client.next() == .ready(userId: "service:notifier"))
                    await client.close()
                }
            }
        }
    }

    @Test("a revocation whose notification was lost takes effect when the listener reconnects")
    func lostNotification() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let client = try await subscribed(server, alice, to: partition("user=\(alice.userID)"))
                // Recorded as a revoking instance would, but with its notification lost.
                try await db.client.query(
                    "INSERT INTO psync_revocations (kind, subject, expires_at) VALUES ('user', \(alice.userID), now() + interval '1 hour')")
                client.send(.ping(nonce: 1))
                #expect(try await client.next { $0 == .pong(nonce: 1) } == .pong(nonce: 1))
                let killed = try await db.client.query(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%' AND datname = current_database()")
                for try await _ in killed {}
                try await expectRevoked(client)
                #expect(try await upgradeRefused(server, token: alice.accessToken))
            }
        }
    }

    @Test("an API-key session ends after its maximum lifetime with token_expired and 4001")
    func apiKeySessionLifetime() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { $0.sessions.apiKeySessionLifetime = .seconds(2) }) { server in
                let key = try await APIKeys(client: db.client, logger: db.logger).create(name: "notifier")
                let client = try await server.connect(token: key)
                #expect(try await client.next() == .ready(userId: "service:notifier"))
                let expired = try await client.next(timeout: .seconds(30)) { if case .error = $0 { true } else { false } }
                guard case .error(let error, _) = expired else { return }
                #expect(error.code == .tokenExpired)
                #expect(try await client.closeCode(timeout: .seconds(30)) == 4001)
            }
        }
    }

    // MARK: Helpers

    /// A session of `tokens` on `server`, subscribed to `partition` and caught up.
    func subscribed(_ server: TestServer, _ tokens: TestHTTPClient.Tokens, to partition: Partition) async throws -> TestSyncClient {
        let client = try await server.connect(token: tokens.accessToken)
        #expect(try await client.next() == .ready(userId: tokens.userID))
        client.send(.subscribe(partition: partition, cursor: nil))
        var copy = PartitionCopy()
        try await client.sync(partition, into: &copy)
        return client
    }

    /// The session gets `error` `session_revoked`, then is closed with 4001.
    func expectRevoked(_ client: TestSyncClient) async throws {
        let message = try await client.next(timeout: .seconds(30)) { if case .error = $0 { true } else { false } }
        guard case .error(let error, _) = message else { return }
        #expect(error.code == .sessionRevoked)
        #expect(try await client.closeCode(timeout: .seconds(30)) == 4001)
    }

    /// Whether a WebSocket upgrade with `token` is refused (no `ready` arrives).
    func upgradeRefused(_ server: TestServer, token: String) async throws -> Bool {
        guard let client = try? await server.connect(token: token) else { return true }
        do {
            _ = try await client.next(timeout: .seconds(10))
            await client.close()
            return false
        } catch {
            return true
        }
    }
}
