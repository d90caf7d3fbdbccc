import Foundation
import Logging
import PartitionSync
import PostgresNIO
import SyncProtocol

/// User accounts in `psync_users`: created with their `user registered` event and deleted
/// with their `user deleted` event and revocation, each in one transaction.
package struct AccountStore: Sendable {
    let store: ObjectStore
    var client: PostgresClient { store.client }
    var logger: Logger { store.logger }

    package init(store: ObjectStore) {
        self.store = store
    }

    /// Creates an account and records its `registered` event (whose details say whether the
    /// email is verified); `false` when the email (case-insensitively) has an account already.
    /// An account that never verified its email and is older than `unverifiedHold` gives the
    /// email up: it is deleted (with its `deleted` event) in the same transaction, so an
    /// address nobody proved is not held from its owner for ever.
    package func create(
        userID: String, email: String, passwordHash: String, verified: Bool, unverifiedHold: Duration? = nil,
        revocationLifetime: Duration = .seconds(3600)
    ) async throws -> Bool {
        let logger = self.logger
        return try await store.withWriteTransaction(author: "system:auth") { transaction in
            if let unverifiedHold {
                try await Self.releaseUnverified(
                    emailKey: email.lowercased(), olderThan: unverifiedHold, revocationLifetime: revocationLifetime, in: transaction)
            }
            let rows = try await transaction.connection.query(
                """
                INSERT INTO psync_users (id, email, email_key, password_hash, email_verified_at)
                VALUES (\(userID), \(email), \(email.lowercased()), \(passwordHash), CASE WHEN \(verified) THEN now() END)
                ON CONFLICT (email_key) DO NOTHING
                RETURNING id
                """, logger: logger)
            var inserted = false
            for try await _ in rows { inserted = true }
            if inserted {
                transaction.recordUserEvent(
                    .user, .registered, userID: userID, details: ["email": .string(email), "emailVerified": .bool(verified)])
            }
            return inserted
        }
    }

    /// Deletes the password account holding `emailKey` if it never verified it and is older
    /// than `age` (`nil`: whatever its age), recording its `deleted` event and revoking its
    /// access tokens for `revocationLifetime`; whether one was.
    @discardableResult
    static func releaseUnverified(
        emailKey: String, olderThan age: Duration?, revocationLifetime: Duration, in transaction: WriteTransaction
    ) async throws -> Bool {
        let rows = try await transaction.connection.query(
            """
            DELETE FROM psync_users
            WHERE email_key = \(emailKey) AND email_verified_at IS NULL AND issuer IS NULL AND imported_at IS NULL
              AND (\(age == nil) OR created_at < now() - make_interval(secs => \(age?.intervalSeconds ?? 0)))
            RETURNING id, email
            """, logger: transaction.logger)
        var released = false
        for try await (id, email) in rows.decode((String, String).self) {
            // Its email was never verified: the event carries none, so no application binds it.
            transaction.recordUserEvent(.user, .deleted, userID: id, details: ["emailVerified": .bool(false)])
            transaction.logger.notice("an unverified account gave its email up", metadata: ["userId": "\(id)", "email": "\(email)"])
            try await RevocationLedger.record([.user(id)], for: revocationLifetime, on: transaction.connection, logger: transaction.logger)
            released = true
        }
        return released
    }

    /// Marks an account's email verified and records its `verified` event, in one transaction;
    /// `false` when it was verified already (or there is no such account).
    package func markVerified(userID: String) async throws -> Bool {
        let logger = self.logger
        return try await store.withWriteTransaction(author: "system:auth") { transaction in
            var email: String?
            for try await value in try await transaction.connection.query(
                """
                UPDATE psync_users SET email_verified_at = now()
                WHERE id = \(userID) AND email_verified_at IS NULL AND email IS NOT NULL
                RETURNING email
                """, logger: logger
            ).decode(String.self) { email = value }
            guard let email else { return false }
            try await transaction.connection.query("DELETE FROM psync_email_codes WHERE user_id = \(userID)", logger: logger)
            transaction.recordUserEvent(.user, .verified, userID: userID, details: ["email": .string(email), "emailVerified": true])
            return true
        }
    }

    /// The account of an identity provider's subject, made on its first sign-in with its
    /// `registered` event. `email` is the address the provider vouches for (its
    /// `email_verified` claim), or `nil`: the account is made with it when no other account
    /// verified it, taking it from an account that registered it and never proved it; when a
    /// verified account holds it, the new account has no email. Later sign-ins do not change
    /// the account.
    package func externalAccount(
        issuer: String, subject: String, verifiedEmail email: String?, revocationLifetime: Duration = .seconds(3600)
    ) async throws -> String {
        let logger = self.logger
        if let id = try await externalID(issuer: issuer, subject: subject) { return id }
        return try await store.withWriteTransaction(author: "system:auth") { transaction in
            var email = email
            if let address = email {
                try await Self.releaseUnverified(
                    emailKey: address.lowercased(), olderThan: nil, revocationLifetime: revocationLifetime, in: transaction)
            }
            let userID = UUID().uuidString.lowercased()
            var inserted: String?
            for try await id in try await transaction.connection.query(
                """
                INSERT INTO psync_users (id, email, email_key, email_verified_at, issuer, subject)
                VALUES (\(userID), \(email), \(email?.lowercased()), CASE WHEN \(email != nil) THEN now() END, \(issuer), \(subject))
                ON CONFLICT DO NOTHING
                RETURNING id
                """, logger: logger
            ).decode(String.self) { inserted = id }
            if inserted == nil, email != nil {
                // The email is a verified account's (or the subject signed in at the same
                // moment): try again without it, which conflicts only on the subject.
                email = nil
                for try await id in try await transaction.connection.query(
                    """
                    INSERT INTO psync_users (id, issuer, subject) VALUES (\(userID), \(issuer), \(subject))
                    ON CONFLICT DO NOTHING
                    RETURNING id
                    """, logger: logger
                ).decode(String.self) { inserted = id }
            }
            guard inserted != nil else {
                // Made by a concurrent sign-in of the same subject, which committed first.
                guard let id = try await Self.externalID(issuer: issuer, subject: subject, on: transaction.connection, logger: logger) else {
                    throw AccountStoreError.externalAccountRace
                }
                return id
            }
            var details: [String: JSONValue] = ["issuer": .string(issuer), "emailVerified": .bool(email != nil)]
            if let email { details["email"] = .string(email) }
            transaction.recordUserEvent(.user, .registered, userID: userID, details: details)
            return userID
        }
    }

    func externalID(issuer: String, subject: String) async throws -> String? {
        let logger = self.logger
        return try await client.withOpenConnection { try await Self.externalID(issuer: issuer, subject: subject, on: $0, logger: logger) }
    }

    static func externalID(issuer: String, subject: String, on connection: PostgresConnection, logger: Logger) async throws -> String? {
        let rows = try await connection.query("SELECT id FROM psync_users WHERE issuer = \(issuer) AND subject = \(subject)", logger: logger)
        for try await id in rows.decode(String.self) { return id }
        return nil
    }

    /// An account's email and whether it is verified; `nil` when there is no such account.
    package func account(of userID: String) async throws -> (email: String?, verified: Bool)? {
        let rows = try await client.fetch(
            "SELECT email, email_verified_at IS NOT NULL FROM psync_users WHERE id = \(userID)", logger: logger)
        for try await (email, verified) in rows.decode((String?, Bool).self) { return (email, verified) }
        return nil
    }

    /// The account of a lowercased email: its id and password hash.
    package func credentials(emailKey: String) async throws -> (userID: String, passwordHash: String)? {
        let rows = try await client.fetch("SELECT id, password_hash FROM psync_users WHERE email_key = \(emailKey) AND password_hash IS NOT NULL", logger: logger)
        for try await (id, hash) in rows.decode((String, String).self) { return (id, hash) }
        return nil
    }

    /// Deletes an account, records its `deleted` event and revokes its access tokens for
    /// `revocationLifetime`, in one transaction; `false` when there was no such account.
    package func delete(userID: String, revocationLifetime: Duration) async throws -> Bool {
        let logger = self.logger
        return try await store.withWriteTransaction(author: "system:auth") { transaction in
            var found: (email: String?, verified: Bool)?
            for try await (email, verified) in try await transaction.connection.query(
                "DELETE FROM psync_users WHERE id = \(userID) RETURNING email, email_verified_at IS NOT NULL", logger: logger
            ).decode((String?, Bool).self) { found = (email, verified) }
            guard let found else { return false }
            // Only a verified email is named: no application bound the account by another.
            var details: [String: JSONValue] = ["emailVerified": .bool(found.verified)]
            if found.verified, let email = found.email { details["email"] = .string(email) }
            transaction.recordUserEvent(.user, .deleted, userID: userID, details: details)
            try await RevocationLedger.record([.user(userID)], for: revocationLifetime, on: transaction.connection, logger: logger)
            return true
        }
    }

    /// The verified email of an account, or `nil` when there is no such account or its email
    /// is not verified.
    package func email(of userID: String) async throws -> String? {
        let logger = self.logger
        return try await client.withOpenConnection { try await Self.email(of: userID, on: $0, logger: logger) }
    }

    /// The id of the account that verified an email (compared case-insensitively), or `nil`.
    package func userID(ofEmail email: String) async throws -> String? {
        let logger = self.logger
        return try await client.withOpenConnection { try await Self.userID(ofEmail: email, on: $0, logger: logger) }
    }

    /// The id of the account of an email, read on `connection` (inside its transaction).
    package static func userID(ofEmail email: String, on connection: PostgresConnection, logger: Logger) async throws -> String? {
        let key = email.trimmingCharacters(in: .whitespaces).lowercased()
        let rows = try await connection.query("SELECT id FROM psync_users WHERE email_key = \(key) AND email_verified_at IS NOT NULL", logger: logger)
        for try await id in rows.decode(String.self) { return id }
        return nil
    }

    /// The verified email of an account, read on `connection` (inside its transaction).
    package static func email(of userID: String, on connection: PostgresConnection, logger: Logger) async throws -> String? {
        let rows = try await connection.query("SELECT email FROM psync_users WHERE id = \(userID) AND email_verified_at IS NOT NULL", logger: logger)
        for try await email in rows.decode(String.self) { return email }
        return nil
    }
}

extension Duration {
    /// Seconds, fractions included, for `make_interval(secs => …)`.
    package var intervalSeconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}

/// A sign-in of an identity provider's subject found neither its account nor room to make it.
package enum AccountStoreError: Error {
    case externalAccountRace
}
