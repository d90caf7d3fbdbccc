import Foundation
import PostgresNIO
import SyncProtocol

extension ObjectStore {
    /// The author of the deletions of expired objects, as change events and triggers see it.
    package static let expiryAuthor = "server:expiry"

    /// Deletes up to `limit` objects whose expiry time (``ObjectExpiry``) has passed, in one
    /// transaction, exactly as a client's `delete` would: subscribers receive the deletions,
    /// triggers get their events (author ``expiryAuthor``), and the blobs the objects
    /// referenced are released. A constant number of statements, however many objects and
    /// partitions. An object written meanwhile with a later time, or none, is left alone; two
    /// instances expiring at once delete each object once. Returns how many were deleted.
    @discardableResult
    package func expireDue(limit: Int = 1_000) async throws -> Int {
        let rows = try await client.fetch(
            """
            SELECT collection, id, partition FROM psync_expiries
            WHERE expires_at <= now() ORDER BY expires_at LIMIT \(limit)
            """, logger: logger)
        var due: [(key: ObjectKey, partition: Partition)] = []
        for try await (collection, id, partition) in rows.decode((String, String, String).self) {
            due.append((ObjectKey(uncheckedCollection: collection, id: id), try Partition(partition)))
        }
        guard !due.isEmpty else { return 0 }
        return try await withWriteTransaction(author: Self.expiryAuthor) { transaction in
            try await transaction.lock(Array(Set(due.map(\.partition))))
            // After the locks no one else writes these partitions, and this read sees every
            // commit before them: what is still due now is deleted.
            let rows = try await transaction.connection.query(
                """
                SELECT e.collection, e.id FROM psync_expiries e
                JOIN unnest(\(due.map(\.key.collection))::text[], \(due.map(\.key.id))::text[]) AS k(collection, id)
                  ON e.collection = k.collection AND e.id = k.id
                WHERE e.expires_at <= now()
                """, logger: logger)
            var still: Set<ObjectKey> = []
            for try await (collection, id) in rows.decode((String, String).self) {
                still.insert(ObjectKey(uncheckedCollection: collection, id: id))
            }
            var operations: [Partition: [SyncOperation]] = [:]
            for entry in due where still.contains(entry.key) {
                operations[entry.partition, default: []].append(.delete(entry.key))
            }
            return try await transaction.apply(operations)
        }
    }

    /// When the next object expires, if any does.
    package func nextExpiry() async throws -> Date? {
        let rows = try await client.fetch("SELECT min(expires_at) FROM psync_expiries", logger: logger)
        for try await date in rows.decode(Date?.self) { return date }
        return nil
    }
}
