import Foundation
import Logging
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
    /// The class of the family locks (`pg_advisory_xact_lock(class, key)`), "psrf" in ASCII;
    /// the two-key space does not overlap the migrator's one-key lock.
    static let familyLockClass: Int32 = 0x7073_7266

    /// Exchanges a refresh token for new tokens; `unauthenticated` for an unknown, expired or
    /// revoked token, or one reused after the grace period (which revokes its family).
    public func refresh(_ refreshToken: String) async throws -> Tokens {
        let digest = SecretHash.digest(refreshToken)
        let grace = Self.seconds(configuration.refreshReuseGrace)
        let lifetime = Self.seconds(configuration.refreshTokenLifetime)
        let replacement = SecretHash.makeSecret(prefix: "psr_")
        let logger = self.logger
        let lifetimeOfRevocation = revocationLifetime
        let outcome: RefreshOutcome = try await client.withTransaction(logger: logger) { connection in
            guard let family = try await Self.lockFamily(of: digest, on: connection, logger: logger) else { return .refused }
            // Read after the lock: every rotation or revocation committed before it is seen. The
            // grace is measured on the clock, not at transaction start (`now()`): a transaction
            // that waited for the lock began before the rotation it then sees.
            let rows = try await connection.query(
                """
                SELECT user_id, revoked_at IS NOT NULL, expires_at <= now(), used_at IS NOT NULL,
                       coalesce(used_at > clock_timestamp() - make_interval(secs => \(grace)), false)
                FROM psync_refresh_tokens WHERE token_hash = \(digest)
                """, logger: logger)
            var found: (String, Bool, Bool, Bool, Bool)?
            for try await row in rows.decode((String, Bool, Bool, Bool, Bool).self) { found = row }
            guard let found else { return .refused }
            let (userID, revoked, expired, used, withinGrace) = found
            if revoked || (used && !withinGrace) {
                // A used token presented again after the grace: it was stolen or replayed. The
                // family's access tokens stop working too, on every instance.
                try await connection.query(
                    "UPDATE psync_refresh_tokens SET revoked_at = now() WHERE family = \(family) AND revoked_at IS NULL",
                    logger: logger)
                guard !revoked else { return .refused }
                try await RevocationLedger.record([.family(family.uuidString)], for: lifetimeOfRevocation, on: connection, logger: logger)
                logger.notice("refresh token reused after its grace: family revoked", metadata: ["userId": "\(userID)"])
                return .revoked(family)
            }
            if expired { return .refused }
            if !used {
                try await connection.query(
                    "UPDATE psync_refresh_tokens SET used_at = clock_timestamp() WHERE token_hash = \(digest)", logger: logger)
            }
            try await connection.query(
                """
                INSERT INTO psync_refresh_tokens (token_hash, user_id, family, expires_at)
                VALUES (\(SecretHash.digest(replacement)), \(userID), \(family), now() + make_interval(secs => \(lifetime)))
                """, logger: logger)
            return .issued(userID: userID, family: family)
        }
        guard case .issued(let userID, let family) = outcome else {
            if case .revoked(let family) = outcome {
                // This instance's list learns it at once, not only through the announcement.
                revocations.add([.family(family.uuidString)], expires: Date() + revocationLifetime.timeInterval)
            }
            throw SyncError(.unauthenticated, "the refresh token is not valid")
        }
        let (accessToken, expiresIn) = try await issuer.issue(userID: userID, session: family)
        return Tokens(userID: userID, accessToken: accessToken, refreshToken: replacement, expiresIn: expiresIn)
    }

    /// What a refresh came to.
    enum RefreshOutcome {
        case issued(userID: String, family: UUID)
        /// A reuse after the grace revoked this family now.
        case revoked(UUID)
        case refused
    }

    /// Revokes a refresh token and every token rotated from the same login, and the access
    /// tokens issued with them (their `sid`), on every instance.
    public func logout(_ refreshToken: String) async throws {
        let digest = SecretHash.digest(refreshToken)
        let logger = self.logger
        let lifetime = revocationLifetime
        let revoked: [Revocation] = try await client.withTransaction(logger: logger) { connection in
            guard let family = try await Self.lockFamily(of: digest, on: connection, logger: logger) else { return [] }
            try await connection.query(
                "UPDATE psync_refresh_tokens SET revoked_at = now() WHERE family = \(family) AND revoked_at IS NULL",
                logger: logger)
            let revoked = [Revocation.family(family.uuidString)]
            try await RevocationLedger.record(revoked, for: lifetime, on: connection, logger: logger)
            return revoked
        }
        if !revoked.isEmpty { revocations.add(revoked, expires: Date() + lifetime.timeInterval) }
    }

    /// Stores a new refresh token of a new or continuing family and signs an access token.
    func issueTokens(userID: String, family: UUID) async throws -> Tokens {
        let refreshToken = SecretHash.makeSecret(prefix: "psr_")
        let seconds = Self.seconds(configuration.refreshTokenLifetime)
        try await client.query(
            """
            INSERT INTO psync_refresh_tokens (token_hash, user_id, family, expires_at)
            VALUES (\(SecretHash.digest(refreshToken)), \(userID), \(family), now() + make_interval(secs => \(seconds)))
            """, logger: logger)
        let (accessToken, expiresIn) = try await issuer.issue(userID: userID, session: family)
        return Tokens(userID: userID, accessToken: accessToken, refreshToken: refreshToken, expiresIn: expiresIn)
    }

    /// The family of the token with this digest, locked until the transaction ends; `nil`
    /// for an unknown token.
    private static func lockFamily(of digest: Data, on connection: PostgresConnection, logger: Logger) async throws -> UUID? {
        var family: UUID?
        let rows = try await connection.query(
            "SELECT family FROM psync_refresh_tokens WHERE token_hash = \(digest)", logger: logger)
        for try await value in rows.decode(UUID.self) { family = value }
        guard let family else { return nil }
        try await connection.query(
            "SELECT pg_advisory_xact_lock(\(familyLockClass), hashtext(\(family.uuidString)))", logger: logger)
        return family
    }
}
