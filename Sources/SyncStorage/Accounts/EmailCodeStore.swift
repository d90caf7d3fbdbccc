import Crypto
import Foundation
import Logging
import PostgresNIO

/// The email verification codes in `psync_email_codes`: one live code per account, stored as
/// its SHA-256 hash, with its expiry and the wrong guesses made against it.
package struct EmailCodeStore: Sendable {
    /// What checking a code found.
    package enum Check: Sendable, Equatable {
        /// The code is the account's live code; the account is now verified.
        case verified
        /// The account's email is verified already.
        case alreadyVerified
        /// Not the live code (or none is live); `attemptsLeft` more guesses at this code.
        case wrong(attemptsLeft: Int)
        /// No code is live: never sent, expired, or spent by wrong guesses.
        case noLiveCode
    }

    let store: ObjectStore
    var client: PostgresClient { store.client }
    var logger: Logger { store.logger }

    package init(store: ObjectStore) {
        self.store = store
    }

    /// Replaces the account's code by `code`, live for `lifetime`, unless one was sent less
    /// than `resendInterval` ago (then `false`: the caller asks again later). The account must
    /// exist and not be verified yet (otherwise `false`). Times are the database's clock.
    package func replace(userID: String, code: String, lifetime: Duration, resendInterval: Duration) async throws -> Bool {
        let hash = Self.hash(code)
        let rows = try await client.fetch(
            """
            INSERT INTO psync_email_codes (user_id, code_hash, sent_at, expires_at)
            SELECT id, \(hash), now(), now() + make_interval(secs => \(lifetime.intervalSeconds)) FROM psync_users WHERE id = \(userID) AND email_verified_at IS NULL AND email IS NOT NULL
            ON CONFLICT (user_id) DO UPDATE SET code_hash = EXCLUDED.code_hash, sent_at = now(),
                expires_at = EXCLUDED.expires_at, failed_attempts = 0
            WHERE psync_email_codes.sent_at <= now() - make_interval(secs => \(resendInterval.intervalSeconds))
            RETURNING user_id
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Forgets the account's code: one that could not be mailed does not hold back the next.
    package func forget(userID: String) async throws {
        try await client.fetch("DELETE FROM psync_email_codes WHERE user_id = \(userID)", logger: logger)
    }

    /// Checks `code` against the account's live code; a wrong one counts against it, and
    /// after `maximumAttempts` wrong ones the code is spent. A right one verifies the account
    /// (``AccountStore/markVerified(userID:)``).
    package func check(userID: String, code: String, maximumAttempts: Int) async throws -> Check {
        let hash = Self.hash(code)
        let rows = try await client.fetch(
            """
            WITH live AS (
                SELECT user_id, code_hash = \(hash) AS matches FROM psync_email_codes
                WHERE user_id = \(userID) AND expires_at > now() AND failed_attempts < \(maximumAttempts)
                FOR UPDATE
            ), counted AS (
                UPDATE psync_email_codes c SET failed_attempts = failed_attempts + 1
                FROM live WHERE c.user_id = live.user_id AND NOT live.matches
                RETURNING c.failed_attempts
            )
            SELECT (SELECT matches FROM live), (SELECT failed_attempts FROM counted)
            """, logger: logger)
        var matches: Bool?
        var failures: Int?
        for try await (found, counted) in rows.decode((Bool?, Int?).self) { (matches, failures) = (found, counted) }
        switch matches {
        case true?:
            _ = try await AccountStore(store: store).markVerified(userID: userID)
            return .verified
        case false?:
            return .wrong(attemptsLeft: max(0, maximumAttempts - (failures ?? maximumAttempts)))
        case nil:
            if let account = try await AccountStore(store: store).account(of: userID), account.verified { return .alreadyVerified }
            return .noLiveCode
        }
    }

    static func hash(_ code: String) -> Data {
        Data(SHA256.hash(data: Data(code.utf8)))
    }
}
