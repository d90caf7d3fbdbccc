import Foundation
import PartitionSync
import PostgresNIO
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Authentication over HTTP, against a real server and database.
@Suite("Authentication", .timeLimit(.minutes(30)))
struct AuthTests {
    let password = "correct horse battery"

    @Test("register, duplicate email, login, wrong password, bad input")
    func registerAndLogin() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let http = server.http
                let created = try await http.post("/v1/auth/register", ["email": "Ann@Example.com", "password": .string(password)])
                #expect(created.status == 201)
                #expect(created.json?["expiresIn"] == 900)
                let userID = try #require(created.json?["userId"]?.stringValue)
                let duplicate = try await http.post("/v1/auth/register", ["email": "ann@example.COM", "password": "another password"])
                #expect(duplicate.status == 409)
                #expect(duplicate.json?["error"]?["code"] == "email_taken")
                let login = try await http.login("ann@example.com", password: password)
                #expect(login.userID == userID)
                let wrong = try await http.post("/v1/auth/login", ["email": "ann@example.com", "password": "wrong password"])
                #expect(wrong.status == 401)
                #expect(wrong.json?["error"]?["code"] == "invalid_credentials")
                let unknown = try await http.post("/v1/auth/login", ["email": "nobody@example.com", "password": .string(password)])
                #expect(unknown.json?["error"]?["code"] == "invalid_credentials")
                for body: JSONValue in [["email": "not-an-email", "password": .string(password)], ["email": "b@example.com", "password": "short"], ["email": 5], [:]] {
                    let bad = try await http.post("/v1/auth/register", body)
                    #expect(bad.status == 400)
                    #expect(bad.json?["error"]?["code"] == "bad_request")
                }
                let garbage = try await http.request("POST", "/v1/auth/login", body: Data("{not json".utf8))
                #expect(garbage.status == 400)
                // Nothing secret is stored in clear.
                let rows = try await db.client.query("SELECT password_hash FROM psync_users")
                for try await hash in rows.decode(String.self) {
                    #expect(hash.hasPrefix("$2"))
                    #expect(!hash.contains(password))
                }
            }
        }
    }

    @Test("an expired access token is token_expired; a forged one is unauthenticated")
    func expiredToken() async throws {
        let clock = MockClock()
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: onMockTime(clock, tokenLifetime: .seconds(60))) { server in
                let tokens = try await server.register("ann@example.com")
                let path = "/v1/partitions/user%3D\(tokens.userID)/changes"
                clock.advance(by: .seconds(59))
                #expect(try await server.http.get(path, token: tokens.accessToken).status == 200)
                clock.advance(by: .seconds(1))
                let expired = try await server.http.get(path, token: tokens.accessToken)
                #expect(expired.status == 401)
                #expect(expired.json?["error"]?["code"] == "token_expired")
                let forged = try await server.http.get(path, token: tokens.accessToken + "x")
                #expect(forged.json?["error"]?["code"] == "unauthenticated")
                let none = try await server.http.get(path)
                #expect(none.json?["error"]?["code"] == "unauthenticated")
                // A WebSocket upgrade with an expired token is refused.
                await #expect(throws: (any Error).self) {
                    let client = try await server.connect(token: tokens.accessToken)
                    _ = try await client.next(timeout: .seconds(2))
                }
            }
        }
    }

    @Test("refresh rotates: the old refresh token stops working, and reusing it after the grace revokes the family")
    func refreshRotation() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { $0.auth.refreshReuseGrace = .zero }) { server in
                let http = server.http
                let first = try await server.register("ann@example.com")
                let rotated = try await http.post("/v1/auth/refresh", ["refreshToken": .string(first.refreshToken)])
                #expect(rotated.status == 200)
                let second = try #require(rotated.json?["refreshToken"]?.stringValue)
                #expect(second != first.refreshToken)
                #expect(rotated.json?["userId"]?.stringValue == first.userID)
                let newAccess = try #require(rotated.json?["accessToken"]?.stringValue)
                #expect(try await http.get("/v1/partitions/user%3D\(first.userID)/changes", token: newAccess).status == 200)
                let replay = try await http.post("/v1/auth/refresh", ["refreshToken": .string(first.refreshToken)])
                #expect(replay.status == 401)
                // The replay of a used token revoked the whole family, so the newer one is dead too.
                let afterTheft = try await http.post("/v1/auth/refresh", ["refreshToken": .string(second)])
                #expect(afterTheft.status == 401)
                #expect(try await http.post("/v1/auth/refresh", ["refreshToken": "psr_made_up"]).status == 401)
            }
        }
    }

    @Test("logout revokes the refresh token")
    func logout() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let tokens = try await server.register("ann@example.com")
                let other = try await server.http.login("ann@example.com", password: password)
                #expect(try await server.http.post("/v1/auth/logout", ["refreshToken": .string(tokens.refreshToken)]).status == 204)
                #expect(try await server.http.post("/v1/auth/refresh", ["refreshToken": .string(tokens.refreshToken)]).status == 401)
                // Another login (another device) is unaffected.
                #expect(try await server.http.post("/v1/auth/refresh", ["refreshToken": .string(other.refreshToken)]).status == 200)
                let rows = try await db.client.query("SELECT count(*) FROM psync_refresh_tokens WHERE token_hash = convert_to(\(tokens.refreshToken), 'UTF8')")
                for try await count in rows.decode(Int.self) { #expect(count == 0) }
            }
        }
    }

    @Test("failed logins are rate limited per account and address, and per address")
    func rateLimit() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: {
                $0.auth.failuresPerAccountAddress = 3
                $0.auth.failuresPerAddress = 6
            }) { server in
                _ = try await server.register("ann@example.com")
                _ = try await server.register("bob@example.com")
                for _ in 0..<3 {
                    #expect(try await server.http.post("/v1/auth/login", ["email": "ann@example.com", "password": "wrong one!"]).status == 401)
                }
                let limited = try await server.http.post("/v1/auth/login", ["email": "ann@example.com", "password": .string(password)])
                #expect(limited.status == 429)
                #expect(limited.json?["error"]?["code"] == "rate_limited")
                #expect(limited.headers["retry-after"] != nil)
                // Another account from the same address still works, until the address limit.
                _ = try await server.http.login("bob@example.com", password: password)
                for _ in 0..<3 {
                    _ = try await server.http.post("/v1/auth/login", ["email": "bob@example.com", "password": "wrong one!"])
                }
                #expect(try await server.http.post("/v1/auth/login", ["email": "carol@example.com", "password": "wrong one!"]).status == 429)
            }
        }
    }

    @Test("API keys: created once, stored hashed, act as a service principal, revocable")
    func apiKeys() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { server in
                let keys = APIKeys(client: db.client, logger: db.logger)
                let key = try await keys.create(name: "notifier")
                #expect(key.hasPrefix("psk_"))
                await #expect(throws: SyncError.self) { try await keys.create(name: "notifier") }
                let upload = try await server.http.post(
                    "/v1/partitions/notice%3Dall/uploads",
                    ["requestId": "r1", "operations": [["op": "put", "collection": "Notice", "id": "n1", "body": ["text": "hi"]]]],
                    token: key)
                #expect(upload.status == 200)
                #expect(try await keys.list().map(\.name) == ["notifier"])
                let stored = try await db.client.query("SELECT count(*) FROM psync_api_keys WHERE key_hash = convert_to(\(key), 'UTF8')")
                for try await count in stored.decode(Int.self) { #expect(count == 0) }
                #expect(try await keys.revoke(name: "notifier"))
                let refused = try await server.http.get("/v1/partitions/notice%3Dall/changes", token: key)
                #expect(refused.status == 401)
            }
        }
    }
}

@Suite("Authentication input", .timeLimit(.minutes(30)))
struct AuthInputTests {
    @Test("control characters in a login email are a bad request, not a server error")
    func controlCharacters() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let response = try await server.http.post("/v1/auth/login", ["email": "a\u{0}b@example.com", "password": "whatever123"])
                #expect(response.status == 400)
                #expect(response.json?["error"]?["code"] == "bad_request")
                let long = try await server.http.post("/v1/auth/register", ["email": "long@example.com", "password": .string(String(repeating: "é", count: 100))])
                #expect(long.status == 201)
                #expect(try await server.http.post("/v1/auth/login", ["email": "long@example.com", "password": .string(String(repeating: "é", count: 100))]).status == 200)
                #expect(try await server.http.post("/v1/auth/login", ["email": "long@example.com", "password": .string(String(repeating: "é", count: 99) + "e")]).status == 401)
                let method = try await server.http.request("PUT", "/v1/auth/login", body: nil)
                #expect(method.status == 405)
                #expect(method.headers["allow"] == "POST")
            }
        }
    }
}
