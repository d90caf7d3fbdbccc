import Foundation
import Logging
import PostgresNIO

/// Revoked credentials in `psync_revocations` (migration 0009), shared by every server
/// instance: recording one also announces it, in the same transaction, so the instances hear
/// of it when it commits; an instance whose listening connection was lost reads them all again.
package struct RevocationLedger: Sendable {
    let client: PostgresClient
    let logger: Logger

    package init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    package init(store: ObjectStore) {
        self.init(client: store.client, logger: store.logger)
    }

    /// Records revocations in their own transaction.
    /// - Parameter lifetime: how long to keep them; `nil` for good.
    package func record(_ revocations: [Revocation], for lifetime: Duration?) async throws {
        guard !revocations.isEmpty else { return }
        try await client.withOpenTransaction(logger: logger) { connection in
            try await Self.record(revocations, for: lifetime, on: connection, logger: logger)
        }
    }

    /// Records revocations and announces them in the caller's transaction: both take effect
    /// when it commits, and neither if it rolls back.
    /// - Parameter lifetime: how long to keep them; `nil` for good. A revocation recorded again
    ///   keeps the later expiry.
    package static func record(
        _ revocations: [Revocation], for lifetime: Duration?, on connection: PostgresConnection, logger: Logger
    ) async throws {
        guard !revocations.isEmpty else { return }
        let kinds = revocations.map(\.kind.rawValue)
        let subjects = revocations.map(\.subject)
        let seconds = lifetime.map { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
        // The notification carries the expiry (rounded up), so listeners can forget it in time.
        let rows = try await connection.query(
            """
            WITH written AS (
                INSERT INTO psync_revocations AS r (kind, subject, expires_at)
                SELECT kind, subject, now() + make_interval(secs => \(seconds)::double precision)
                FROM unnest(\(kinds)::text[], \(subjects)::text[]) AS t(kind, subject)
                ON CONFLICT (kind, subject) DO UPDATE SET expires_at =
                    CASE WHEN r.expires_at IS NULL OR EXCLUDED.expires_at IS NULL THEN NULL
                         ELSE greatest(r.expires_at, EXCLUDED.expires_at) END
                RETURNING kind, subject, expires_at)
            SELECT pg_notify(\(ObjectStore.notificationChannel), \(ChangeNotification.revokedPrefix) || kind || ':'
                || coalesce(ceil(extract(epoch FROM expires_at))::bigint::text, 'never') || ':' || subject)
            FROM written
            """, logger: logger)
        for try await _ in rows {}
    }

    /// Every revocation in force, with when it lapses (`nil`: never).
    package func live() async throws -> [Revocation: Date?] {
        let rows = try await client.fetch(
            "SELECT kind, subject, expires_at FROM psync_revocations WHERE expires_at IS NULL OR expires_at > now()",
            logger: logger)
        var result: [Revocation: Date?] = [:]
        for try await (kind, subject, expires) in rows.decode((String, String, Date?).self) {
            guard let kind = Revocation.Kind(rawValue: kind) else { continue }
            result.updateValue(expires, forKey: Revocation(kind: kind, subject: subject))
        }
        return result
    }

    /// Removes the revocations that have lapsed; returns how many.
    @discardableResult
    package func prune() async throws -> Int {
        let rows = try await client.fetch(
            "DELETE FROM psync_revocations WHERE expires_at <= now() RETURNING 1", logger: logger)
        var count = 0
        for try await _ in rows { count += 1 }
        return count
    }
}
