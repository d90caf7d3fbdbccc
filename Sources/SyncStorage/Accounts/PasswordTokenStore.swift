import Crypto
import Foundation
import Logging
import PartitionSync
import PostgresNIO
import SyncProtocol

/// Imported accounts (migration 0013) and their one-time password-set tokens in
/// `psync_password_tokens`, stored as SHA-256 hashes: an imported account has no password, so
/// it cannot sign in until its owner sets one with the token (`POST /v1/auth/password`).
package struct PasswordTokenStore: Sendable {
    /// What importing one account found.
    package enum Created: Sendable, Equatable {
        /// Made, with its token.
        case created
        /// An account with this id and this email exists already (an import run again): kept
        /// as it is, no new token.
        case exists
        /// The account was imported before and has no password yet: its token was replaced
        /// by the new one (`--reissue-tokens`).
        case reissued
        /// Another account holds the email (case-insensitively), or this id with another email.
        case conflict(String)
    }

    let store: ObjectStore
    var client: PostgresClient { store.client }
    var logger: Logger { store.logger }

    package init(store: ObjectStore) {
        self.store = store
    }

    /// Makes an imported account with id `userID` and `email` (verified or not, as the
    /// operator decided), no password and the token `token`, live for `lifetime`, with its
    /// user `import` event (whose details name the email and say whether it is verified), all
    /// in one transaction; `recordsEvent` false leaves the event out (`--no-triggers`).
    package func importAccount(
        userID: String, email: String, verified: Bool, token: String, lifetime: Duration, recordsEvent: Bool = true,
        reissue: Bool = false
    ) async throws -> Created {
        let logger = self.logger
        let hash = Self.hash(token)
        return try await store.withWriteTransaction(author: "system:import") { transaction in
            let rows = try await transaction.connection.query(
                """
                INSERT INTO psync_users (id, email, email_key, password_hash, email_verified_at, imported_at)
                VALUES (\(userID), \(email), \(email.lowercased()), NULL, CASE WHEN \(verified) THEN now() END, now())
                ON CONFLICT DO NOTHING
                RETURNING id
                """, logger: logger)
            var inserted = false
            for try await _ in rows { inserted = true }
            guard inserted else {
                var holders: [(String, String?)] = []
                for try await row in try await transaction.connection.query(
                    "SELECT id, email_key FROM psync_users WHERE id = \(userID) OR email_key = \(email.lowercased())", logger: logger
                ).decode((String, String?).self) { holders.append(row) }
                guard holders.contains(where: { $0.0 == userID && $0.1 == email.lowercased() }) else {
                    return .conflict("another account holds this id or this email")
                }
                guard reissue else { return .exists }
                let replaced = try await transaction.connection.query(
                    """
                    INSERT INTO psync_password_tokens (user_id, token_hash, expires_at)
                    SELECT id, \(hash), now() + make_interval(secs => \(lifetime.intervalSeconds)) FROM psync_users
                    WHERE id = \(userID) AND password_hash IS NULL AND imported_at IS NOT NULL
                    ON CONFLICT (user_id) DO UPDATE SET token_hash = EXCLUDED.token_hash, expires_at = EXCLUDED.expires_at
                    RETURNING user_id
                    """, logger: logger)
                var reissued = false
                for try await _ in replaced { reissued = true }
                return reissued ? .reissued : .exists
            }
            try await transaction.connection.query(
                """
                INSERT INTO psync_password_tokens (user_id, token_hash, expires_at)
                VALUES (\(userID), \(hash), now() + make_interval(secs => \(lifetime.intervalSeconds)))
                """, logger: logger)
            if recordsEvent {
                transaction.recordUserEvent(
                    .user, .import, userID: userID, details: ["email": .string(email), "emailVerified": .bool(verified)])
            }
            return .created
        }
    }

    /// Whether `token` is a live token (unknown, used and expired ones are not): checked
    /// before the password is hashed, so a guess costs no hashing.
    package func isLive(token: String) async throws -> Bool {
        let rows = try await client.fetch(
            "SELECT 1 FROM psync_password_tokens WHERE token_hash = \(Self.hash(token)) AND expires_at > now()", logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Spends `token` and sets its account's password hash to `passwordHash` (marking its
    /// email verified too when `verifies`, with the `verified` event); the account's id, or
    /// `nil` for a token that is unknown, used or expired.
    package func setPassword(token: String, passwordHash: String, verifies: Bool) async throws -> String? {
        let logger = self.logger
        let hash = Self.hash(token)
        return try await store.withWriteTransaction(author: "system:auth") { transaction in
            var userID: String?
            for try await id in try await transaction.connection.query(
                "DELETE FROM psync_password_tokens WHERE token_hash = \(hash) AND expires_at > now() RETURNING user_id", logger: logger
            ).decode(String.self) { userID = id }
            guard let userID else { return nil }
            try await transaction.connection.query(
                "UPDATE psync_users SET password_hash = \(passwordHash) WHERE id = \(userID)", logger: logger)
            if verifies {
                for try await email in try await transaction.connection.query(
                    """
                    UPDATE psync_users SET email_verified_at = now()
                    WHERE id = \(userID) AND email_verified_at IS NULL RETURNING email
                    """, logger: logger
                ).decode(String.self) {
                    transaction.recordUserEvent(.user, .verified, userID: userID, details: ["email": .string(email), "emailVerified": true])
                }
            }
            return userID
        }
    }

    static func hash(_ token: String) -> Data {
        Data(SHA256.hash(data: Data(token.utf8)))
    }
}
