import _CryptoExtras
import Foundation
import Hummingbird
import JWTKit
import Locking
import PartitionSync
import ServiceLifecycle
import SyncProtocol
@testable import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Access tokens of an OpenID Connect provider (docs/SECURITY.md, "Identity providers"; issue
/// 29, finding 6), against a provider played by the test: its discovery document and key set
/// served over HTTP on loopback, RS256 and ES256 keys, rotated while the server runs.
@Suite("Identity providers", .timeLimit(.minutes(30)))
struct IdentityProviderTests {
    static let audience = "psync-test-app"

    /// The provider's side: keys that sign, and the key set it publishes.
    final class Provider: Sendable {
        let rsa = try! Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
        let otherRSA = try! Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
        let ec = ES256PrivateKey()
        /// The key ids published, and how often the key set was fetched.
        let state = Locked<(published: Set<String>, fetches: Int)>((["r1", "e1"], 0))
        let signers = JWTKeyCollection()

        func setUp() async {
            await signers.add(rsa: rsa, digestAlgorithm: .sha256, kid: "r1")
            await signers.add(rsa: rsa, digestAlgorithm: .sha256, kid: "r2")
            await signers.add(ecdsa: ec, kid: "e1")
            await signers.add(rsa: otherRSA, digestAlgorithm: .sha256, kid: "forged")
        }

        func keySet() -> String {
            let published = state.withLock { state in
                state.fetches += 1
                return state.published
            }
            var keys: [JSONValue] = []
            let (modulus, exponent) = try! rsa.publicKey.getKeyPrimitives()
            for kid in ["r1", "r2"] where published.contains(kid) {
                keys.append(["kty": "RSA", "kid": .string(kid), "use": "sig", "alg": "RS256", "n": .string(base64URL(modulus)), "e": .string(base64URL(exponent))])
            }
            if published.contains("e1"), let (x, y) = ec.publicKey.parameters {
                keys.append(["kty": "EC", "crv": "P-256", "kid": "e1", "use": "sig", "x": .string(x), "y": .string(y)])
            }
            return JSONValue.object(["keys": .array(keys)]).jsonString
        }

        func token(_ claims: Claims, kid: String) async throws -> String {
            try await signers.sign(claims, kid: JWKIdentifier(string: kid))
        }
    }

    struct Claims: JWTPayload {
        var iss: String
        var sub: String
        var aud: String
        var exp: Int
        var iat: Int
        var email: String?
        var email_verified: Bool?

        init(issuer: String, subject: String, audience: String = IdentityProviderTests.audience, expiresIn seconds: Int = 600, email: String? = nil, verified: Bool? = nil) {
            let now = Int(Date().timeIntervalSince1970)
            iss = issuer
            sub = subject
            aud = audience
            exp = now + seconds
            iat = now
            self.email = email
            email_verified = verified
        }

        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// Serves the provider's discovery document and key set on a free loopback port.
    static func withProvider<Result: Sendable>(_ body: @Sendable (Provider, String) async throws -> Result) async throws -> Result {
        let provider = Provider()
        await provider.setUp()
        let port = Locked<Int?>(nil)
        let issuerBox = Locked<String>("")
        let router = Router()
        router.get(".well-known/openid-configuration") { _, _ -> Response in
            let issuer = issuerBox.withLock { $0 }
            return json(JSONValue.object(["issuer": .string(issuer), "jwks_uri": .string(issuer + "/keys")]).jsonString)
        }
        router.get("keys") { _, _ -> Response in json(provider.keySet()) }
        let app = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in port.withLock { $0 = channel.localAddress?.port } },
            logger: TestPostgres.makeLogger("psync.test.provider"))
        let group = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: TestPostgres.makeLogger("psync.test.provider"))
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            do {
                let deadline = ContinuousClock.now + .seconds(20)
                while port.withLock({ $0 }) == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
                let issuer = "http://127.0.0.1:\(try #require(port.withLock { $0 }))"
                issuerBox.withLock { $0 = issuer }
                let result = try await body(provider, issuer)
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
                return result
            } catch {
                await group.triggerGracefulShutdown()
                tasks.cancelAll()
                throw error
            }
        }
    }

    static func json(_ text: String) -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    static func trusting(_ issuer: String, _ change: @escaping @Sendable (inout ServerConfiguration) -> Void = { _ in })
        -> @Sendable (inout ServerConfiguration) -> Void
    {
        { configuration in
            var provider = IdentityProviderConfiguration(issuer: issuer, audience: audience)
            provider.minimumRefetchInterval = .zero
            configuration.auth.identityProviders = [provider]
            change(&configuration)
        }
    }

    @Test("RS256 and ES256 tokens of the provider sign in; the subject's account is made once, with the email the provider verified; WebSocket sessions take them")
    func accepted() async throws {
        try await Self.withProvider { provider, issuer in
            try await TestDatabase.with { db in
                try await TestServer.with(
                    database: db.url, application: SyncApplication(permissions: TestServer.defaultPermissions, triggers: [EmailVerificationTests.userEvents]),
                    configure: Self.trusting(issuer)
                ) { server in
                    let http = server.http
                    let rsaToken = try await provider.token(Claims(issuer: issuer, subject: "alice-1", email: "alice@corp.example", verified: true), kid: "r1")
                    let me = try await http.get("/v1/auth/me", token: rsaToken)
                    #expect(me.status == 200)
                    let userID = try #require(me.json?["userId"]?.stringValue)
                    #expect(me.json?["email"] == "alice@corp.example" && me.json?["emailVerified"] == true)
                    // The same subject again (another token, the other algorithm): the same account.
                    let ecToken = try await provider.token(Claims(issuer: issuer, subject: "alice-1"), kid: "e1")
                    #expect(try await http.get("/v1/auth/me", token: ecToken).json?["userId"]?.stringValue == userID)
                    #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_users WHERE issuer IS NOT NULL") == 1)
                    #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_events WHERE kind = 'user' AND operation = 'registered' AND user_id = '\(userID)'") == 1)

                    // An unverified email claim is not taken.
                    let bobToken = try await provider.token(Claims(issuer: issuer, subject: "bob-2", email: "bob@corp.example", verified: false), kid: "e1")
                    let bob = try await http.get("/v1/auth/me", token: bobToken)
                    #expect(bob.json?["email"] == nil && bob.json?["emailVerified"] == false)

                    // A session with the token reaches the user's own partition.
                    let client = try await server.connect(token: rsaToken)
                    _ = try await client.next()
                    #expect(try await client.upload([.put(key("Note", "n1"), body: ["text": "hi"])], to: partition("user=\(userID)"), requestId: "n1").isAck)
                }
            }
        }
    }

    @Test("forged, expired, wrong-audience, wrong-issuer, unknown-key, `alg: none` and HS256-with-the-public-key tokens are refused")
    func refused() async throws {
        try await Self.withProvider { provider, issuer in
            try await TestDatabase.with { db in
                try await TestServer.with(database: db.url, configure: Self.trusting(issuer)) { server in
                    let http = server.http
                    func status(_ token: String) async throws -> (Int, String?) {
                        let response = try await http.get("/v1/auth/me", token: token)
                        return (response.status, response.json?["error"]?["code"]?.stringValue)
                    }
                    // Signed by another key under the provider's key id.
                    let forged = try await provider.token(Claims(issuer: issuer, subject: "mallory"), kid: "forged")
                    let parts = forged.split(separator: ".")
                    let header = Self.base64URL(Data(#"{"alg":"RS256","kid":"r1","typ":"JWT"}"#.utf8))
                    #expect(try await status("\(header).\(parts[1]).\(parts[2])") == (401, "unauthenticated"))
                    #expect(try await status(forged) == (401, "unauthenticated"))
                    #expect(try await status(try await provider.token(Claims(issuer: issuer, subject: "a", expiresIn: -600), kid: "r1")) == (401, "token_expired"))
                    #expect(try await status(try await provider.token(Claims(issuer: issuer, subject: "a", audience: "another-app"), kid: "r1")) == (401, "unauthenticated"))
                    #expect(try await status(try await provider.token(Claims(issuer: "http://127.0.0.1:1", subject: "a"), kid: "r1")) == (401, "unauthenticated"))
                    // `alg: none`, and HS256 signed with the provider's public key as secret.
                    let none = Self.base64URL(Data(#"{"alg":"none","kid":"r1"}"#.utf8)) + "." + parts[1] + "."
                    #expect(try await status(none).0 == 401)
                    // Key confusion: HS256 with the provider's published RSA key as the secret.
                    let confused = JWTKeyCollection()
                    await confused.add(hmac: HMACKey(from: provider.rsa.publicKey.pemRepresentation), digestAlgorithm: .sha256, kid: "r1")
                    let hs256 = try await confused.sign(Claims(issuer: issuer, subject: "mallory"), kid: JWKIdentifier(string: "r1"))
                    #expect(try await status(hs256) == (401, "unauthenticated"))
                    #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_users") == 0)
                }
            }
        }
    }

    @Test("a key the provider adds is fetched when a token names it; one it removes stops working at the next fetch")
    func rotation() async throws {
        try await Self.withProvider { provider, issuer in
            try await TestDatabase.with { db in
                try await TestServer.with(database: db.url, configure: Self.trusting(issuer)) { server in
                    let http = server.http
                    let first = try await provider.token(Claims(issuer: issuer, subject: "carol"), kid: "r1")
                    #expect(try await http.get("/v1/auth/me", token: first).status == 200)
                    let fetches = provider.state.withLock { $0.fetches }
                    // Not published yet: refused, after one more fetch.
                    let rotated = try await provider.token(Claims(issuer: issuer, subject: "carol"), kid: "r2")
                    #expect(try await http.get("/v1/auth/me", token: rotated).status == 401)
                    #expect(provider.state.withLock { $0.fetches } == fetches + 1)
                    provider.state.withLock { $0.published = ["r2", "e1"] }
                    #expect(try await http.get("/v1/auth/me", token: rotated).status == 200)
                    // r1 is gone from the set the server now holds.
                    #expect(try await http.get("/v1/auth/me", token: first).status == 401)
                }
            }
        }
    }

    @Test("a provider's verified email takes the address from an account that registered it and never proved it")
    func verifiedClaimWins() async throws {
        try await Self.withProvider { provider, issuer in
            try await SMTPSink.with { sink in
                try await TestDatabase.with { db in
                    let configure = Self.trusting(issuer) { configuration in
                        configuration.auth.emailVerification.required = true
                        configuration.auth.emailVerification.mailer = SMTPMailer(
                            settings: SMTPMailer.Settings(url: sink.url, sender: "no-reply@psync.test")!, logger: TestPostgres.makeLogger("psync.test.mail"))
                    }
                    try await TestServer.with(database: db.url, configure: configure) { server in
                        let http = server.http
                        let squatter = try await http.register("dana@corp.example", password: "correct horse battery")
                        let token = try await provider.token(Claims(issuer: issuer, subject: "dana", email: "dana@corp.example", verified: true), kid: "e1")
                        let me = try await http.get("/v1/auth/me", token: token)
                        #expect(me.json?["email"] == "dana@corp.example" && me.json?["emailVerified"] == true)
                        #expect(me.json?["userId"]?.stringValue != squatter.userID)
                        #expect(try await TestTriggers.eventually { try await http.get("/v1/auth/me", token: squatter.accessToken).status == 401 })
                    }
                }
            }
        }
    }
}
