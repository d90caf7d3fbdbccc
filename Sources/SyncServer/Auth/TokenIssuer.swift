import Crypto
import Foundation
import JWTKit
import PartitionSync
import SyncProtocol

/// Signs and verifies short-lived access tokens (JWT, HS256).
package final class TokenIssuer: Sendable {
    struct Claims: JWTPayload {
        var sub: SubjectClaim
        var exp: ExpirationClaim
        var iat: IssuedAtClaim
        /// The refresh-token family the token was issued with: a logout revokes its tokens.
        var sid: String?

        // Expiry is checked by the issuer itself, to tell an expired token from a forged one.
        func verify(using algorithm: some JWTAlgorithm) throws {}
    }

    let keys: JWTKeyCollection
    package let lifetime: Duration
    /// Whose wall time issues tokens and tells them expired.
    package let time: SyncClock

    /// - Parameters:
    ///   - secret: one ``JWTSecretPolicy`` accepts; `nil` makes a random one.
    ///   - time: the wall time tokens are issued and checked at (``ServerConfiguration/time``).
    package init(secret: String?, lifetime: Duration, time: SyncClock = .system) async throws {
        let key: HMACKey
        if let secret {
            if let weakness = JWTSecretPolicy.weakness(of: secret) {
                throw SyncError(.internal, "the JWT secret \(weakness); \(JWTSecretPolicy.advice)")
            }
            key = HMACKey(from: secret)
        } else {
            key = HMACKey(key: SymmetricKey(size: .bits256))
        }
        keys = JWTKeyCollection()
        await keys.add(hmac: key, digestAlgorithm: .sha256)
        self.lifetime = lifetime
        self.time = time
    }

    /// A signed token for the user and its lifetime in seconds; `session` (the refresh-token
    /// family) goes in the `sid` claim.
    package func issue(userID: String, session: UUID? = nil) async throws -> (token: String, expiresIn: Int) {
        let now = time.now()
        let seconds = Int(lifetime.components.seconds)
        let claims = Claims(
            sub: SubjectClaim(value: userID), exp: ExpirationClaim(value: now.addingTimeInterval(TimeInterval(seconds))),
            iat: IssuedAtClaim(value: now), sid: session?.uuidString.lowercased())
        return (try await keys.sign(claims), seconds)
    }

    /// The user id of a valid token, when it expires and its `sid`; `token_expired` or `unauthenticated` otherwise.
    package func verify(_ token: String) async throws(SyncError) -> (userID: String, expires: Date, session: String?) {
        let claims: Claims
        do {
            claims = try await keys.verify(token, as: Claims.self)
        } catch {
            throw SyncError(.unauthenticated, "the access token is not valid")
        }
        guard claims.exp.value > time.now() else {
            throw SyncError(.tokenExpired, "the access token has expired; refresh it")
        }
        return (claims.sub.value, claims.exp.value, claims.sid)
    }
}
