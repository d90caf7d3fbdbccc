import Foundation
import Logging
import PostgresNIO
import SyncProtocol
import SyncStorage

/// Server-side API keys: a back-end service authenticates with `Authorization: Bearer psk_…`
/// and acts as the principal `service:<name>`. Only a digest of each key is stored; the key
/// itself is shown once, when it is created.
public struct APIKeys: Sendable {
    static let prefix = "psk_"

    let client: PostgresClient
    let logger: Logger

    public init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Creates a key for a service name and returns it; `bad_request` if the name has a live key.
    public func create(name: String) async throws -> String {
        guard !name.isEmpty, name.count <= 64,
            name.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_" })
        else {
            throw SyncError(.badRequest, "a key name has 1 to 64 letters, digits, '-' or '_'")
        }
        let key = SecretHash.makeSecret(prefix: Self.prefix)
        let rows = try await client.query(
            """
            INSERT INTO psync_api_keys AS k (name, key_hash) VALUES (\(name), \(SecretHash.digest(key)))
            ON CONFLICT (name) DO UPDATE SET key_hash = EXCLUDED.key_hash, created_at = now(), revoked_at = NULL
            WHERE k.revoked_at IS NOT NULL
            RETURNING name
            """, logger: logger)
        for try await _ in rows { return key }
        throw SyncError(.badRequest, "the key '\(name)' exists; revoke it first")
    }

    /// Revokes a key; returns whether one was live. Its open sessions close on every instance
    /// (the key's digest is recorded in `psync_revocations` for good).
    @discardableResult
    public func revoke(name: String) async throws -> Bool {
        let logger = self.logger
        return try await client.withTransaction(logger: logger) { connection in
            var digests: [Data] = []
            for try await digest in try await connection.query(
                "UPDATE psync_api_keys SET revoked_at = now() WHERE name = \(name) AND revoked_at IS NULL RETURNING key_hash",
                logger: logger
            ).decode(Data.self) { digests.append(digest) }
            try await RevocationLedger.record(digests.map { Revocation.key(digest: $0) }, for: nil, on: connection, logger: logger)
            return !digests.isEmpty
        }
    }

    /// The names of the live keys, with when they were created and last used.
    public func list() async throws -> [(name: String, created: Date, lastUsed: Date?)] {
        let rows = try await client.query(
            "SELECT name, created_at, last_used_at FROM psync_api_keys WHERE revoked_at IS NULL ORDER BY name", logger: logger)
        var keys: [(name: String, created: Date, lastUsed: Date?)] = []
        for try await (name, created, lastUsed) in rows.decode((String, Date, Date?).self) { keys.append((name, created, lastUsed)) }
        return keys
    }

    /// The service name of a live key; `unauthenticated` otherwise.
    func verify(_ key: String) async throws -> String {
        let rows = try await client.query(
            """
            UPDATE psync_api_keys SET last_used_at = now()
            WHERE key_hash = \(SecretHash.digest(key)) AND revoked_at IS NULL
              AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')
            RETURNING name
            """, logger: logger)
        for try await name in rows.decode(String.self) { return name }
        // Recently used keys are not updated again; look them up without writing.
        let again = try await client.query(
            "SELECT name FROM psync_api_keys WHERE key_hash = \(SecretHash.digest(key)) AND revoked_at IS NULL", logger: logger)
        for try await name in again.decode(String.self) { return name }
        throw SyncError(.unauthenticated, "the API key is not valid")
    }
}
