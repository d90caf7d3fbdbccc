import Foundation
import Logging
import PostgresNIO

/// API keys of back-end services in `psync_api_keys`, stored as digests.
package struct APIKeyStore: Sendable {
    let client: PostgresClient
    let logger: Logger

    package init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Stores a key under a name that has no live key (a revoked one is replaced); `false`
    /// when the name has a live key.
    package func create(name: String, digest: Data) async throws -> Bool {
        let rows = try await client.fetch(
            """
            INSERT INTO psync_api_keys AS k (name, key_hash) VALUES (\(name), \(digest))
            ON CONFLICT (name) DO UPDATE SET key_hash = EXCLUDED.key_hash, created_at = now(), revoked_at = NULL
            WHERE k.revoked_at IS NOT NULL
            RETURNING name
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// Revokes the live key of a name and records its digest in `psync_revocations` for good,
    /// in one transaction; whether there was one.
    package func revoke(name: String) async throws -> Bool {
        let logger = self.logger
        return try await client.withOpenTransaction(logger: logger) { connection in
            var digests: [Data] = []
            for try await digest in try await connection.query(
                "UPDATE psync_api_keys SET revoked_at = now() WHERE name = \(name) AND revoked_at IS NULL RETURNING key_hash",
                logger: logger
            ).decode(Data.self) { digests.append(digest) }
            try await RevocationLedger.record(digests.map { Revocation.key(digest: $0) }, for: nil, on: connection, logger: logger)
            return !digests.isEmpty
        }
    }

    /// The live keys' names, with when they were created and last used.
    package func list() async throws -> [(name: String, created: Date, lastUsed: Date?)] {
        let rows = try await client.fetch(
            "SELECT name, created_at, last_used_at FROM psync_api_keys WHERE revoked_at IS NULL ORDER BY name", logger: logger)
        var keys: [(name: String, created: Date, lastUsed: Date?)] = []
        for try await (name, created, lastUsed) in rows.decode((String, Date, Date?).self) { keys.append((name, created, lastUsed)) }
        return keys
    }

    /// The name of the live key with this digest, noting its use (at most once a minute).
    package func name(ofKeyWith digest: Data) async throws -> String? {
        let rows = try await client.fetch(
            """
            UPDATE psync_api_keys SET last_used_at = now()
            WHERE key_hash = \(digest) AND revoked_at IS NULL
              AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
            RETURNING name
            """, logger: logger)
        for try await name in rows.decode(String.self) { return name }
        // Recently used keys are not updated again; look them up without writing.
        let again = try await client.fetch(
            "SELECT name FROM psync_api_keys WHERE key_hash = \(digest) AND revoked_at IS NULL", logger: logger)
        for try await name in again.decode(String.self) { return name }
        return nil
    }
}
