import Foundation
import Logging
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

    /// Creates an account and records its `registered` event; `false` when the email
    /// (case-insensitively) has an account already.
    package func create(userID: String, email: String, passwordHash: String) async throws -> Bool {
        let logger = self.logger
        return try await store.withWriteTransaction(author: "system:auth") { transaction in
            let rows = try await transaction.connection.query(
                """
                INSERT INTO psync_users (id, email, email_key, password_hash)
                VALUES (\(userID), \(email), \(email.lowercased()), \(passwordHash))
                ON CONFLICT (email_key) DO NOTHING
                RETURNING id
                """, logger: logger)
            var inserted = false
            for try await _ in rows { inserted = true }
            if inserted {
                transaction.recordUserEvent(.user, .registered, userID: userID, details: ["email": .string(email)])
            }
            return inserted
        }
    }

    /// The account of a lowercased email: its id and password hash.
    package func credentials(emailKey: String) async throws -> (userID: String, passwordHash: String)? {
        let rows = try await client.fetch("SELECT id, password_hash FROM psync_users WHERE email_key = \(emailKey)", logger: logger)
        for try await (id, hash) in rows.decode((String, String).self) { return (id, hash) }
        return nil
    }

    /// Deletes an account, records its `deleted` event and revokes its access tokens for
    /// `revocationLifetime`, in one transaction; `false` when there was no such account.
    package func delete(userID: String, revocationLifetime: Duration) async throws -> Bool {
        let logger = self.logger
        return try await store.withWriteTransaction(author: "system:auth") { transaction in
            var email: String?
            for try await value in try await transaction.connection.query(
                "DELETE FROM psync_users WHERE id = \(userID) RETURNING email", logger: logger
            ).decode(String.self) { email = value }
            guard let email else { return false }
            transaction.recordUserEvent(.user, .deleted, userID: userID, details: ["email": .string(email)])
            try await RevocationLedger.record([.user(userID)], for: revocationLifetime, on: transaction.connection, logger: logger)
            return true
        }
    }

    /// The email an account registered with, or `nil` when there is no such account.
    package func email(of userID: String) async throws -> String? {
        let logger = self.logger
        return try await client.withOpenConnection { try await Self.email(of: userID, on: $0, logger: logger) }
    }

    /// The id of the account of an email (case-insensitively), or `nil`.
    package func userID(ofEmail email: String) async throws -> String? {
        let logger = self.logger
        return try await client.withOpenConnection { try await Self.userID(ofEmail: email, on: $0, logger: logger) }
    }

    /// The id of the account of an email, read on `connection` (inside its transaction).
    package static func userID(ofEmail email: String, on connection: PostgresConnection, logger: Logger) async throws -> String? {
        let key = email.trimmingCharacters(in: .whitespaces).lowercased()
        let rows = try await connection.query("SELECT id FROM psync_users WHERE email_key = \(key)", logger: logger)
        for try await id in rows.decode(String.self) { return id }
        return nil
    }

    /// The email an account registered with, read on `connection` (inside its transaction).
    package static func email(of userID: String, on connection: PostgresConnection, logger: Logger) async throws -> String? {
        let rows = try await connection.query("SELECT email FROM psync_users WHERE id = \(userID)", logger: logger)
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
