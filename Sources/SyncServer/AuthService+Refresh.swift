import Foundation
import PostgresNIO
import SyncProtocol

/// Refresh-token rotation: a refresh token is used once, and presenting a used one revokes
/// its family.
extension AuthService {
    /// Exchanges a refresh token for new tokens; the old one stops working. Presenting a
    /// token that was already used revokes its whole family.
    public func refresh(_ refreshToken: String) async throws -> Tokens {
        let digest = SecretHash.digest(refreshToken)
        let (userID, family): (String?, UUID?) = try await client.withTransaction(logger: logger) { connection in
            let rows = try await connection.query(
                """
                UPDATE psync_refresh_tokens SET revoked_at = now()
                WHERE token_hash = \(digest) AND revoked_at IS NULL AND expires_at > now()
                RETURNING user_id, family
                """, logger: logger)
            for try await (userID, family) in rows.decode((String, UUID).self) { return (userID, family) }
            // Unknown, expired or already used: if it was used, its family is compromised.
            try await connection.query(
                """
                UPDATE psync_refresh_tokens SET revoked_at = now()
                WHERE family = (SELECT family FROM psync_refresh_tokens WHERE token_hash = \(digest))
                  AND revoked_at IS NULL
                """, logger: logger)
            return (nil, nil)
        }
        guard let userID, let family else {
            throw SyncError(.unauthenticated, "the refresh token is not valid")
        }
        return try await issueTokens(userID: userID, family: family)
    }

    /// Revokes a refresh token and every token rotated from the same login.
    public func logout(_ refreshToken: String) async throws {
        let digest = SecretHash.digest(refreshToken)
        try await client.query(
            """
            UPDATE psync_refresh_tokens SET revoked_at = now()
            WHERE family = (SELECT family FROM psync_refresh_tokens WHERE token_hash = \(digest))
              AND revoked_at IS NULL
            """, logger: logger)
    }

    func issueTokens(userID: String, family: UUID) async throws -> Tokens {
        let refreshToken = SecretHash.makeSecret(prefix: "psr_")
        let seconds = Double(configuration.refreshTokenLifetime.components.seconds)
        try await client.query(
            """
            INSERT INTO psync_refresh_tokens (token_hash, user_id, family, expires_at)
            VALUES (\(SecretHash.digest(refreshToken)), \(userID), \(family), now() + make_interval(secs => \(seconds)))
            """, logger: logger)
        let (accessToken, expiresIn) = try await issuer.issue(userID: userID)
        return Tokens(userID: userID, accessToken: accessToken, refreshToken: refreshToken, expiresIn: expiresIn)
    }
}
