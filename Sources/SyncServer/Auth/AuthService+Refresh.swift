import Foundation
import Logging
import PartitionSync
import PostgresNIO
import SyncProtocol
import SyncStorage

/// Refresh-token rotation. A refresh token is used once: `refresh` marks it used and issues a
/// replacement in the same family. Presenting a used token again within the grace period
/// (``AuthConfiguration/refreshReuseGrace``) issues another replacement in the family (a
/// client whose answer was lost keeps its session); after it, the whole family is revoked.
/// Every change to a family holds the family's advisory lock, so a rotation and a reuse
/// that race cannot leave a token issued after the revocation.
extension AuthService {
    /// Exchanges a refresh token for new tokens; `unauthenticated` for an unknown, expired or
    /// revoked token, or one reused after the grace period (which revokes its family).
    package func refresh(_ refreshToken: String) async throws -> Tokens {
        let replacement = SecretHash.makeSecret(prefix: "psr_")
        let rotation = try await RefreshTokenStore(store: store).rotate(
            digest: SecretHash.digest(refreshToken), replacement: SecretHash.digest(replacement),
            grace: configuration.refreshReuseGrace, lifetime: configuration.refreshTokenLifetime, revocationLifetime: revocationLifetime)
        switch rotation {
        case .issued(let userID, let family):
            let (accessToken, expiresIn) = try await issuer.issue(userID: userID, session: family)
            return Tokens(userID: userID, accessToken: accessToken, refreshToken: replacement, expiresIn: expiresIn)
        case .revoked(let family):
            // This instance's list learns it at once, not only through the announcement.
            revocations.add([.family(family.uuidString)], expires: issuer.time.now() + revocationLifetime.timeInterval)
            throw SyncError(.unauthenticated, "the refresh token is not valid")
        case .refused:
            throw SyncError(.unauthenticated, "the refresh token is not valid")
        }
    }

    /// Revokes a refresh token and every token rotated from the same login, and the access
    /// tokens issued with them (their `sid`), on every instance.
    package func logout(_ refreshToken: String) async throws {
        let lifetime = revocationLifetime
        guard let revoked = try await RefreshTokenStore(store: store).revokeFamily(
            of: SecretHash.digest(refreshToken), revocationLifetime: lifetime)
        else { return }
        revocations.add([revoked], expires: issuer.time.now() + lifetime.timeInterval)
    }

    /// Stores a new refresh token of a new or continuing family and signs an access token.
    func issueTokens(userID: String, family: UUID) async throws -> Tokens {
        let refreshToken = SecretHash.makeSecret(prefix: "psr_")
        try await RefreshTokenStore(store: store).insert(
            digest: SecretHash.digest(refreshToken), userID: userID, family: family, lifetime: configuration.refreshTokenLifetime)
        let (accessToken, expiresIn) = try await issuer.issue(userID: userID, session: family)
        return Tokens(userID: userID, accessToken: accessToken, refreshToken: refreshToken, expiresIn: expiresIn)
    }
}
