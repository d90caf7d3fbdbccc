import Foundation
import Logging
import PostgresNIO
import SyncProtocol

/// The blobs of the database: their names, sizes, media types and uploaders, which objects
/// reference them (kept by migration 0010's triggers), who holds their bytes and so may cite
/// them (migration 0011), uploads with a quota, and the collector
/// of blobs nothing references any more. Bytes are in the ``BlobContentStore``.
package struct BlobStore: Sendable {
    package let client: PostgresClient
    package let content: any BlobContentStore
    let logger: Logger

    package init(client: PostgresClient, content: any BlobContentStore, logger: Logger) {
        self.client = client
        self.content = content
        self.logger = logger
    }

    /// A stored blob.
    package struct Blob: Sendable, Hashable {
        package var digest: BlobDigest
        package var location: String
        package var length: Int64
        package var contentType: String
        package var uploader: String
    }

    /// The blob stored under `digest`, if any.
    package func blob(_ digest: BlobDigest) async throws -> Blob? {
        let rows = try await client.fetch(
            "SELECT location, length, content_type, uploader FROM psync_blobs WHERE digest = \(digest.rawValue)",
            logger: logger)
        for try await (location, length, contentType, uploader) in rows.decode((String, Int64, String, String).self) {
            return Blob(digest: digest, location: location, length: length, contentType: contentType, uploader: uploader)
        }
        return nil
    }

    /// The bytes of `principal`'s blobs: what counts against their quota.
    package func usage(of principal: String) async throws -> Int64 {
        let rows = try await client.fetch(
            "SELECT coalesce(sum(length), 0)::bigint FROM psync_blobs WHERE uploader = \(principal)", logger: logger)
        for try await total in rows.decode(Int64.self) { return total }
        return 0
    }

    /// Records the bytes at `location` as the blob `digest` (they were checked to have that
    /// digest). Returns `true` when the blob is new, `false` when it was stored already (the
    /// new bytes are then removed: a blob is stored once). `quota_exceeded` when the new blob
    /// would take `uploader` over `quota` bytes; uploads of one principal are published one
    /// at a time, so concurrent ones cannot pass the quota together.
    package func publish(
        _ digest: BlobDigest, location: String, length: Int64, contentType: String, uploader: String, quota: Int64
    ) async throws -> Bool {
        let outcome: Result<Bool, SyncError> = try await client.withOpenTransaction(logger: logger) { connection in
            try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtextextended('psync_blob_quota:' || \(uploader), 0))", logger: logger)
            let rows = try await connection.query(
                """
                SELECT EXISTS (SELECT 1 FROM psync_blobs WHERE digest = \(digest.rawValue)),
                       (SELECT coalesce(sum(length), 0)::bigint FROM psync_blobs WHERE uploader = \(uploader))
                """, logger: logger)
            var (exists, used) = (false, Int64(0))
            for try await (found, total) in rows.decode((Bool, Int64).self) { (exists, used) = (found, total) }
            if exists { return .success(false) }
            guard used + length <= quota else {
                return .failure(SyncError(
                    .quotaExceeded, "this blob (\(length) bytes) would take you over your quota of \(quota) bytes (\(used) used)"))
            }
            let inserted = try await connection.query(
                """
                INSERT INTO psync_blobs (digest, location, length, content_type, uploader)
                VALUES (\(digest.rawValue), \(location), \(length), \(contentType), \(uploader))
                ON CONFLICT (digest) DO NOTHING
                RETURNING true
                """, logger: logger)
            var isNew = false
            for try await _ in inserted { isNew = true }
            if isNew {
                try await connection.query(
                    "INSERT INTO psync_blob_holders (digest, principal) VALUES (\(digest.rawValue), \(uploader)) ON CONFLICT DO NOTHING",
                    logger: logger)
            }
            return .success(isNew)
        }
        let isNew = try outcome.get()
        if !isNew { try await content.remove([location]) }
        return isNew
    }

    /// The blob stored under `digest` if a live object of `partition` references it: one
    /// indexed look-up (migration 0011), however many partitions reference the blob.
    package func blob(_ digest: BlobDigest, referencedIn partition: Partition) async throws -> Blob? {
        let rows = try await client.fetch(
            """
            SELECT location, length, content_type, uploader FROM psync_blobs b
            WHERE digest = \(digest.rawValue)
              AND EXISTS (SELECT 1 FROM psync_blob_refs r
                          WHERE r.digest = b.digest AND r.partition = \(partition.description) AND r.released_at IS NULL)
            """, logger: logger)
        for try await (location, length, contentType, uploader) in rows.decode((String, Int64, String, String).self) {
            return Blob(digest: digest, location: location, length: length, contentType: contentType, uploader: uploader)
        }
        return nil
    }

    /// Records that `principal` holds the bytes of `digest` (uploaded them, or downloaded them
    /// whole): it may cite the blob in any partition it may write.
    package func recordHolder(_ digest: BlobDigest, _ principal: String) async throws {
        try await client.fetch(
            """
            INSERT INTO psync_blob_holders (digest, principal)
            SELECT \(digest.rawValue), \(principal) WHERE EXISTS (SELECT 1 FROM psync_blobs WHERE digest = \(digest.rawValue))
            ON CONFLICT DO NOTHING
            """, logger: logger)
    }

    /// Deletes up to `limit` blobs that no live object references, whose last reference was
    /// released at least `released` ago (or that were never referenced and were stored at
    /// least `unreferenced` ago), and their bytes; then the bytes of abandoned uploads.
    /// Returns how many blobs were deleted.
    ///
    /// Safe against a write that references a blob at the same moment: the write locks the
    /// blob's row (``WriteTransaction/checkBlobReferences(_:of:)``) until it commits; the
    /// collector locks the rows it deletes, skipping locked ones, and checks the references
    /// again after the lock, in a statement that sees every commit before it.
    @discardableResult
    package func collect(unreferencedFor unreferenced: Duration, releasedFor released: Duration, limit: Int = 500) async throws -> Int {
        let (grace, horizon) = (Self.seconds(unreferenced), Self.seconds(released))
        let locations: [String] = try await client.withOpenTransaction(logger: logger) { connection in
            let candidates = try await connection.query(
                """
                SELECT b.digest FROM psync_blobs b
                WHERE b.created_at <= now() - make_interval(secs => \(grace))
                  AND NOT EXISTS (
                    SELECT 1 FROM psync_blob_refs r
                    WHERE r.digest = b.digest
                      AND (r.released_at IS NULL OR r.released_at > now() - make_interval(secs => \(horizon))))
                ORDER BY b.created_at
                LIMIT \(limit)
                FOR UPDATE SKIP LOCKED
                """, logger: logger)
            var locked: [String] = []
            for try await digest in candidates.decode(String.self) { locked.append(digest) }
            guard !locked.isEmpty else { return [] }
            // A new statement, a new snapshot: references committed while the lock was awaited count.
            let gone = try await connection.query(
                """
                WITH gone AS (
                    DELETE FROM psync_blobs b
                    WHERE b.digest = ANY(\(locked)::text[])
                      AND NOT EXISTS (
                        SELECT 1 FROM psync_blob_refs r
                        WHERE r.digest = b.digest
                          AND (r.released_at IS NULL OR r.released_at > now() - make_interval(secs => \(horizon))))
                    RETURNING b.digest, b.location
                ), refs AS (
                    DELETE FROM psync_blob_refs r USING gone WHERE r.digest = gone.digest
                ), holders AS (
                    DELETE FROM psync_blob_holders h USING gone WHERE h.digest = gone.digest
                ), trash AS (
                    INSERT INTO psync_blob_trash (location) SELECT location FROM gone ON CONFLICT DO NOTHING
                )
                SELECT location FROM gone
                """, logger: logger)
            var locations: [String] = []
            for try await location in gone.decode(String.self) { locations.append(location) }
            return locations
        }
        try await emptyTrash()
        _ = try await content.removeAbandoned(idleFor: unreferenced)
        if !locations.isEmpty { logger.info("collected blobs", metadata: ["count": "\(locations.count)"]) }
        return locations.count
    }

    /// Removes the bytes of deleted blobs: those of this collection, and those a collection
    /// that stopped between its commit and the removal left behind.
    func emptyTrash() async throws {
        let rows = try await client.fetch("SELECT location FROM psync_blob_trash LIMIT 1000", logger: logger)
        var locations: [String] = []
        for try await location in rows.decode(String.self) { locations.append(location) }
        guard !locations.isEmpty else { return }
        try await content.remove(locations)
        try await client.fetch("DELETE FROM psync_blob_trash WHERE location = ANY(\(locations)::text[])", logger: logger)
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}
