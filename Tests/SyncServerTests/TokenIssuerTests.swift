import Foundation
import SyncProtocol
import SyncTesting
import Testing

@testable import SyncServer

/// Access tokens signed and checked on a `MockClock`'s wall time, without a server: when a
/// token stops being accepted, and that only a token this secret signed is ever accepted.
@Suite("Token issuer")
struct TokenIssuerTests {
    static let secret = TestServer.jwtSecret

    /// The contract code `verify` answers for `token`, or `nil` when it accepts it.
    static func refusal(_ issuer: TokenIssuer, _ token: String) async -> SyncError.Code? {
        do {
            _ = try await issuer.verify(token)
            return nil
        } catch {
            return error.code
        }
    }

    @Test("a token names its user and refresh-token family, and expires its lifetime after it was issued")
    func roundTrip() async throws {
        let clock = MockClock()
        let issuer = try await TokenIssuer(secret: Self.secret, lifetime: .seconds(900), time: clock.time)
        clock.advance(by: .milliseconds(30_250))
        let issuedAt = clock.date
        let family = UUID()
        let (token, expiresIn) = try await issuer.issue(userID: "user-7", session: family)
        #expect(expiresIn == 900)
        let claims = try await issuer.verify(token)
        #expect(claims.userID == "user-7")
        #expect(claims.expires == issuedAt.addingTimeInterval(900))
        // The family as `Revocation.family` and the refresh-token store write it.
        #expect(claims.session == family.uuidString.lowercased())
        let (plain, _) = try await issuer.issue(userID: "user-8")
        #expect(try await issuer.verify(plain).session == nil)
    }

    @Test("a token is accepted up to the last instant of its lifetime and token_expired from that instant on")
    func expiresExactlyAtItsLifetime() async throws {
        let clock = MockClock()
        let issuer = try await TokenIssuer(secret: Self.secret, lifetime: .seconds(60), time: clock.time)
        let (token, _) = try await issuer.issue(userID: "u-1")
        clock.advance(by: .milliseconds(59_999))
        #expect(await Self.refusal(issuer, token) == nil)
        clock.advance(by: .milliseconds(1))
        #expect(await Self.refusal(issuer, token) == .tokenExpired)
        clock.advance(by: .seconds(3_600))
        #expect(await Self.refusal(issuer, token) == .tokenExpired)
    }

    @Test("a lifetime is counted in whole seconds, and the expiresIn a client is told is when the token expires")
    func wholeSecondLifetime() async throws {
        let clock = MockClock()
        let issuer = try await TokenIssuer(secret: Self.secret, lifetime: .milliseconds(90_700), time: clock.time)
        let (token, expiresIn) = try await issuer.issue(userID: "u-1")
        #expect(expiresIn == 90)
        #expect(try await issuer.verify(token).expires == clock.date.addingTimeInterval(90))
        clock.advance(by: .seconds(90))
        #expect(await Self.refusal(issuer, token) == .tokenExpired)
    }

    @Test("what is not a token is unauthenticated", arguments: [
        "", "garbage", "a.b.c", "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ1LTEiLCJleHAiOjQxMDI0NDQ4MDB9.",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1LTEiLCJleHAiOjQxMDI0NDQ4MDB9",
    ])
    func garbage(token: String) async throws {
        let issuer = try await TokenIssuer(secret: Self.secret, lifetime: .seconds(60), time: MockClock().time)
        #expect(await Self.refusal(issuer, token) == .unauthenticated)
    }

    @Test("a token of another secret is unauthenticated, never token_expired, even once its time has passed")
    func otherSecret() async throws {
        let clock = MockClock()
        let ours = try await TokenIssuer(secret: Self.secret, lifetime: .seconds(60), time: clock.time)
        let theirs = try await TokenIssuer(secret: Self.secret + "-other", lifetime: .seconds(60), time: clock.time)
        let random = try await TokenIssuer(secret: nil, lifetime: .seconds(60), time: clock.time)
        let (foreign, _) = try await theirs.issue(userID: "u-1")
        let (unknown, _) = try await random.issue(userID: "u-1")
        #expect(await Self.refusal(ours, foreign) == .unauthenticated)
        #expect(await Self.refusal(ours, unknown) == .unauthenticated)
        clock.advance(by: .seconds(61))
        #expect(await Self.refusal(ours, foreign) == .unauthenticated)
        // Another issuer with the same secret (another instance) accepts ours.
        let (token, _) = try await ours.issue(userID: "u-2")
        let sibling = try await TokenIssuer(secret: Self.secret, lifetime: .seconds(60), time: clock.time)
        #expect(try await sibling.verify(token).userID == "u-2")
    }

    @Test("a token whose claims were changed is unauthenticated: another user's claims under a valid signature")
    func tamperedClaims() async throws {
        let issuer = try await TokenIssuer(secret: Self.secret, lifetime: .seconds(60), time: MockClock().time)
        let (ann, _) = try await issuer.issue(userID: "ann")
        let (bob, _) = try await issuer.issue(userID: "bob")
        let annParts = ann.split(separator: ".", omittingEmptySubsequences: false)
        let bobParts = bob.split(separator: ".", omittingEmptySubsequences: false)
        try #require(annParts.count == 3 && bobParts.count == 3)
        let forged = [annParts[0], bobParts[1], annParts[2]].joined(separator: ".")
        #expect(await Self.refusal(issuer, forged) == .unauthenticated)
        #expect(await Self.refusal(issuer, ann) == nil)
    }

    @Test("a weak secret stops the issuer from being made, with the advice to generate one")
    func weakSecretRefused() async {
        let error = await #expect(throws: SyncError.self) {
            _ = try await TokenIssuer(secret: "change-me", lifetime: .seconds(60), time: MockClock().time)
        }
        #expect(error?.message.contains(JWTSecretPolicy.advice) == true)
    }
}
