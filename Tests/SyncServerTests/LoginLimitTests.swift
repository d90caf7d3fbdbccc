import Foundation
import PartitionSync
import SyncProtocol
import SyncStorage

@testable import SyncServer
import SyncTesting
import Testing

/// Registration and failed-login limits, and the bcrypt work behind logins.
@Suite("Login limits", .timeLimit(.minutes(30)))
struct LoginLimitTests {
    let password = "correct horse battery"

    /// An auth service on the test database with these settings, beside the test server.
    static func makeAuth(_ db: TestDatabase, _ configure: (inout AuthConfiguration) -> Void = { _ in }) async throws -> AuthService {
        var configuration = TestServer.defaultConfiguration.auth
        configure(&configuration)
        let issuer = try await TokenIssuer(secret: TestServer.jwtSecret, lifetime: .seconds(60))
        return AuthService(store: db.store(), configuration: configuration, issuer: issuer, logger: db.logger)
    }

    /// The contract code of what `body` threw, or `nil` when it did not throw.
    static func code(_ body: () async throws -> Void) async -> SyncError.Code? {
        do {
            try await body()
            return nil
        } catch let error as SyncError {
            return error.code
        } catch let limited as RateLimited {
            return limited.error.code
        } catch {
            return SyncError.Code("unexpected: \(error)")
        }
    }

    @Test("a stranger's failures do not lock the owner out from another address")
    func strangerCannotLockOwnerOut() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                _ = try await server.register("ann@example.com")
                let auth = try await Self.makeAuth(db) { $0.failuresPerAccountAddress = 3 }
                for _ in 0..<3 {
                    #expect(await Self.code { _ = try await auth.login(email: "ann@example.com", password: "wrong password", address: "203.0.113.9") } == .invalidCredentials)
                }
                // At the limit: that address may not try that account, even with the password.
                #expect(await Self.code { _ = try await auth.login(email: "ann@example.com", password: password, address: "203.0.113.9") } == .rateLimited)
                // The owner, from elsewhere, is not locked out.
                let owner = try await auth.login(email: "ann@example.com", password: password, address: "198.51.100.7")
                #expect(!owner.refreshToken.isEmpty)
                // The stranger's address may still try other accounts.
                #expect(await Self.code { _ = try await auth.login(email: "bob@example.com", password: "wrong password", address: "203.0.113.9") } == .invalidCredentials)
            }
        }
    }

    @Test("an account over its global failure limit is slowed by the backoff, never locked")
    func accountBackoff() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                _ = try await server.register("ann@example.com")
                // A backoff of an hour: every attempt after the limit falls inside it, no clock needed.
                let slow = try await Self.makeAuth(db) {
                    $0.failuresPerAccount = 2
                    $0.accountBackoff = .seconds(3600)
                }
                for address in ["203.0.113.1", "203.0.113.2"] {
                    #expect(await Self.code { _ = try await slow.login(email: "ann@example.com", password: "wrong password", address: address) } == .invalidCredentials)
                }
                do {
                    _ = try await slow.login(email: "ann@example.com", password: password, address: "198.51.100.7")
                    Issue.record("an attempt inside the backoff was answered")
                } catch let limited as RateLimited {
                    #expect(limited.retryAfter > 0 && limited.retryAfter <= 3600)
                }
                // With no backoff left (a zero backoff), the owner gets in although the count is over the limit.
                let after = try await Self.makeAuth(db) {
                    $0.failuresPerAccount = 2
                    $0.accountBackoff = .zero
                }
                _ = try await after.login(email: "ann@example.com", password: password, address: "198.51.100.7")
            }
        }
    }

    @Test("failures from one address are limited across accounts")
    func addressLimit() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { _ in
                let auth = try await Self.makeAuth(db) { $0.failuresPerAddress = 4 }
                for index in 0..<4 {
                    #expect(await Self.code { _ = try await auth.login(email: "u\(index)@example.com", password: "wrong password", address: "203.0.113.9") } == .invalidCredentials)
                }
                #expect(await Self.code { _ = try await auth.login(email: "other@example.com", password: "wrong password", address: "203.0.113.9") } == .rateLimited)
                #expect(await Self.code { _ = try await auth.login(email: "other@example.com", password: "wrong password", address: "198.51.100.7") } == .invalidCredentials)
            }
        }
    }

    @Test("an unknown email costs the same bcrypt work as a known one with a wrong password")
    func unknownEmailSameWork() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { _ in
                let auth = try await Self.makeAuth(db) { $0.bcryptCost = 6 }
                _ = try await auth.register(email: "ann@example.com", password: password, address: "198.51.100.7")
                var before = auth.hasher.rounds
                #expect(await Self.code { _ = try await auth.login(email: "ann@example.com", password: "wrong password", address: "198.51.100.7") } == .invalidCredentials)
                let known = auth.hasher.rounds - before
                before = auth.hasher.rounds
                #expect(await Self.code { _ = try await auth.login(email: "nobody@example.com", password: "wrong password", address: "198.51.100.7") } == .invalidCredentials)
                let unknown = auth.hasher.rounds - before
                #expect(known == 1 << 6)
                #expect(unknown == known)
                #expect(PasswordHasher.cost(of: auth.hasher.dummyHash) == 6)
            }
        }
    }

    @Test("registrations are limited per address, answered 429 rate_limited with Retry-After")
    func registrationLimit() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { $0.auth.registrationsPerAddress = 2 }) { server in
                _ = try await server.register("a@example.com")
                _ = try await server.register("b@example.com")
                let third = try await server.http.post("/v1/auth/register", ["email": "c@example.com", "password": .string(password)])
                #expect(third.status == 429)
                #expect(third.json?["error"]?["code"] == "rate_limited")
                let retry = try #require(third.headers["retry-after"].flatMap(Int.init))
                #expect(retry > 0 && retry <= 3600)
                // Logins are not registrations.
                _ = try await server.http.login("a@example.com", password: password)
            }
        }
    }

    /// The status of a registration sent with `X-Forwarded-For: client`.
    static func register(_ server: TestServer, _ email: String, from client: String) async throws -> Int {
        try await server.http.request(
            "POST", "/v1/auth/register",
            body: Data(JSONValue.object(["email": .string(email), "password": "correct horse battery"]).jsonBytes),
            headers: ["X-Forwarded-For": client]
        ).status
    }

    @Test("behind a trusted proxy each forwarded client has its own registration limit; without one, X-Forwarded-For changes nothing")
    func registrationLimitBehindProxy() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(
                database: db.url,
                configure: {
                    $0.auth.registrationsPerAddress = 1
                    $0.trustedProxies = [AddressRange("127.0.0.0/8")!, AddressRange("::1")!]
                }
            ) { server in
                let first = try await Self.register(server, "a@example.com", from: "203.0.113.1")
                let second = try await Self.register(server, "b@example.com", from: "203.0.113.2")
                let third = try await Self.register(server, "c@example.com", from: "203.0.113.1")
                #expect([first, second, third] == [Int](arrayLiteral: 201, 201, 429))
            }
            // Not a proxy: the header is the client's own claim, and one address is one address.
            try await TestServer.with(database: db.url, configure: { $0.auth.registrationsPerAddress = 1 }) { server in
                let first = try await Self.register(server, "d@example.com", from: "203.0.113.3")
                let second = try await Self.register(server, "e@example.com", from: "203.0.113.4")
                #expect([first, second] == [Int](arrayLiteral: 201, 429))
            }
        }
    }

    @Test("bcrypt work beyond the concurrency and its queue is refused, not queued without bound")
    func hashQueueLimit() async throws {
        let hasher = PasswordHasher(cost: 4, concurrency: 1, queueLimit: 1)
        let (holding, holder) = AsyncStream.makeStream(of: Void.self)
        let (release, releaser) = AsyncStream.makeStream(of: Void.self)
        let first = Task {
            try await hasher.withSlot(rounds: 0) {
                holder.yield()
                for await _ in release { break }
            }
        }
        for await _ in holding { break }
        let second = Task { try await hasher.hash("queued password") }
        // Wait (generously) until the second is queued behind the first.
        for _ in 0..<2_000 where hasher.waitingCount == 0 { try await Task.sleep(for: .milliseconds(5)) }
        #expect(hasher.waitingCount == 1)
        await #expect(throws: RateLimited.self) { _ = try await hasher.hash("one too many") }
        releaser.yield()
        try await first.value
        #expect(try await second.value.hasPrefix("$2"))
    }
}
