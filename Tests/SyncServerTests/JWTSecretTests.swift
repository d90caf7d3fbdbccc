import Foundation
import PartitionSync
import SyncServer
import SyncTesting
import Testing

/// A known or weak JWT secret stops the server at start.
@Suite("JWT secret", .timeLimit(.minutes(30)))
struct JWTSecretTests {
    @Test("psync serve exits non-zero with one clear line for the secret that docker-compose.yml used to ship")
    func processRefusesKnownSecret() async throws {
        try await TestDatabase.with { db in
            let server = try ServerProcess(
                database: db.url, environment: ["PSYNC_JWT_SECRET": "change-me-to-a-long-random-secret-of-32-bytes-or-more"])
            await #expect(throws: TestTimeout.self) { try await server.start(timeout: .seconds(60)) }
            #expect(!server.isRunning)
            let log = try String(contentsOfFile: server.logPath, encoding: .utf8)
            #expect(log.contains("PSYNC_JWT_SECRET"), "\(log.suffix(500))")
            #expect(log.contains("openssl rand -base64 48"), "\(log.suffix(500))")
        }
    }
}

@Suite("JWT secret policy")
struct JWTSecretPolicyTests {
    @Test("refused: short, published, placeholder, one repeated character, low entropy", arguments: [
        "too-short-secret",
        "change-me-to-a-long-random-secret-of-32-bytes-or-more",
        "please-change-me-before-deploying-this-server-0001",
        "my-jwt-secret-for-production-deployments-2024",
        String(repeating: "a", count: 64),
        "secretsecretsecretsecretsecretsecret",
        "01010101010101010101010101010101010101",
    ])
    func refused(secret: String) {
        #expect(JWTSecretPolicy.weakness(of: secret) != nil)
    }

    @Test("accepted: random secrets, the test harness's", arguments: [
        "Jx0q3Rk9TzVb1mWcY7pLhN2sFa8uQeD4gK6oXiZr5HtCvBnM",
        "3f9a1c7e5b2d8046aa17c3e9f0b2d4c6e8a1f3b5d7c9e0a2",
        TestServer.jwtSecret,
    ])
    func accepted(secret: String) {
        #expect(JWTSecretPolicy.weakness(of: secret) == nil)
    }

    @Test("the edge: 31 random bytes are refused, 32 accepted")
    func lengthEdge() {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
        let secret = String(alphabet.prefix(32))
        #expect(JWTSecretPolicy.weakness(of: String(secret.dropLast())) != nil)
        #expect(JWTSecretPolicy.weakness(of: secret) == nil)
    }
}
