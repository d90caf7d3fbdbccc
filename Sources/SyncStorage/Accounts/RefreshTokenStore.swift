import Foundation
import Logging
import PostgresNIO

/// Refresh tokens in `psync_refresh_tokens`, stored as digests. A token is used once: a
/// rotation marks it used and stores its replacement in the same family (one login). Every
/// change to a family holds the family's advisory lock, so a rotation and a reuse that race
/// cannot leave a token issued after the family's revocation.
package struct RefreshTokenStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    package init(store: ObjectStore) {
        self.client = store.client
        self.logger = store.logger
    }

    /// The class of the family locks (`pg_advisory_xact_lock(class, key)`), "psrf" in ASCII;
    /// the two-key space does not overlap the migrator's one-key lock.
    static let familyLockClass: Int32 = 0x7073_7266

    /// What a rotation came to.
    package enum Rotation: Sendable, Hashable {
        /// The replacement was stored, in the family of the presented token.
        case issued(userID: String, family: UUID)
        /// A used token was presented after the grace: its family was revoked now.
        case revoked(family: UUID)
        /// Unknown, expired or already revoked.
        case refused
    }

    /// Stores a token of a new or continuing family.
    package func insert(digest: Data, userID: String, family: UUID, lifetime: Duration) async throws {
        try await client.fetch(
            """
            INSERT INTO psync_refresh_tokens (token_hash, user_id, family, expires_at)
            VALUES (\(digest), \(userID), \(family), now() + make_interval(secs => \(lifetime.intervalSeconds)))
            """, logger: logger)
    }

    /// Rotates the token with digest `digest`: stores `replacement` in its family, unless it is
    /// unknown, expired or revoked, or was used more than `grace` ago (then its whole family
    /// is revoked, and with it the family's access tokens for `revocationLifetime`, on every
    /// instance). Within the grace a used token rotates again (a client whose answer was lost).
    package func rotate(digest: Data, replacement: Data, grace: Duration, lifetime: Duration, revocationLifetime: Duration) async throws -> Rotation {
        let logger = self.logger
        return try await client.withOpenTransaction(logger: logger) { connection in
            guard let family = try await Self.lockFamily(of: digest, on: connection, logger: logger) else { return .refused }
            // Read after the lock: every rotation or revocation committed before it is seen. The
            // grace is measured on the clock, not at transaction start (`now()`): a transaction
            // that waited for the lock began before the rotation it then sees.
            let rows = try await connection.query(
                """
                SELECT user_id, revoked_at IS NOT NULL, expires_at <= now(), used_at IS NOT NULL,
                       coalesce(used_at > clock_timestamp() - make_interval(secs => \(grace.intervalSeconds)), false)
                FROM psync_refresh_tokens WHERE token_hash = \(digest)
                """, logger: logger)
            var found: (String, Bool, Bool, Bool, Bool)?
            for try await row in rows.decode((String, Bool, Bool, Bool, Bool).self) { found = row }
            guard let found else { return .refused }
            let (userID, revoked, expired, used, withinGrace) = found
            if revoked || (used && !withinGrace) {
                // A used token presented again after the grace: it was stolen or replayed.
                try await Self.revoke(family: family, on: connection, logger: logger)
                guard !revoked else { return .refused }
                try await RevocationLedger.record([.family(family.uuidString)], for: revocationLifetime, on: connection, logger: logger)
                logger.notice("refresh token reused after its grace: family revoked", metadata: ["userId": "\(userID)"])
                return .revoked(family: family)
            }
            if expired { return .refused }
            if !used {
                try await connection.query(
                    "UPDATE psync_refresh_tokens SET used_at = clock_timestamp() WHERE token_hash = \(digest)", logger: logger)
            }
            try await connection.query(
                """
                INSERT INTO psync_refresh_tokens (token_hash, user_id, family, expires_at)
                VALUES (\(replacement), \(userID), \(family), now() + make_interval(secs => \(lifetime.intervalSeconds)))
                """, logger: logger)
            return .issued(userID: userID, family: family)
        }
    }

    /// Revokes the family of the token with digest `digest` and its access tokens (for
    /// `revocationLifetime`, on every instance); the revocation, or `nil` for an unknown token.
    package func revokeFamily(of digest: Data, revocationLifetime: Duration) async throws -> Revocation? {
        let logger = self.logger
        return try await client.withOpenTransaction(logger: logger) { connection in
            guard let family = try await Self.lockFamily(of: digest, on: connection, logger: logger) else { return nil }
            try await Self.revoke(family: family, on: connection, logger: logger)
            let revocation = Revocation.family(family.uuidString)
            try await RevocationLedger.record([revocation], for: revocationLifetime, on: connection, logger: logger)
            return revocation
        }
    }

    /// Revokes every family of a user's refresh tokens and their access tokens (for
    /// `revocationLifetime`, on every instance): their sessions end, and signing in again makes
    /// a new family. The revocations made (none when the user had no open family).
    package func revokeAll(of userID: String, revocationLifetime: Duration) async throws -> [Revocation] {
        let logger = self.logger
        return try await client.withOpenTransaction(logger: logger) { connection in
            var families: [UUID] = []
            for try await family in try await connection.query(
                "SELECT DISTINCT family FROM psync_refresh_tokens WHERE user_id = \(userID) AND expires_at > now() ORDER BY family", logger: logger
            ).decode(UUID.self) { families.append(family) }
            var revocations: [Revocation] = []
            for family in families {
                try await connection.query(
                    "SELECT pg_advisory_xact_lock(\(Self.familyLockClass), hashtext(\(family.uuidString)))", logger: logger)
                try await Self.revoke(family: family, on: connection, logger: logger)
                revocations.append(.family(family.uuidString))
            }
            if !revocations.isEmpty {
                try await RevocationLedger.record(revocations, for: revocationLifetime, on: connection, logger: logger)
            }
            return revocations
        }
    }

    private static func revoke(family: UUID, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            "UPDATE psync_refresh_tokens SET revoked_at = now() WHERE family = \(family) AND revoked_at IS NULL", logger: logger)
    }

    /// The family of the token with this digest, locked until the transaction ends; `nil`
    /// for an unknown token.
    private static func lockFamily(of digest: Data, on connection: PostgresConnection, logger: Logger) async throws -> UUID? {
        var family: UUID?
        let rows = try await connection.query("SELECT family FROM psync_refresh_tokens WHERE token_hash = \(digest)", logger: logger)
        for try await value in rows.decode(UUID.self) { family = value }
        guard let family else { return nil }
        try await connection.query(
            "SELECT pg_advisory_xact_lock(\(familyLockClass), hashtext(\(family.uuidString)))", logger: logger)
        return family
    }
}
