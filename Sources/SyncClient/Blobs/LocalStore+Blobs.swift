import Foundation
import GRDB
import SyncProtocol

/// The blobs the client keeps: those attached to writes and not yet uploaded (pinned until
/// the server has them), and those fetched, as a cache bounded in bytes, least recently used
/// first out. Bytes are files named by digest in ``LocalStore/blobDirectory``; this is their index.
extension LocalStore {
    struct StoredBlob: Sendable, Hashable {
        var reference: BlobReference
        var pendingUpload: Bool
    }

    static func migrateBlobs(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("2-blobs") { db in
            try db.execute(sql: """
                CREATE TABLE blobs (
                    digest TEXT PRIMARY KEY, length INTEGER NOT NULL, content_type TEXT NOT NULL,
                    pending_upload INTEGER NOT NULL, sequence INTEGER NOT NULL, last_used REAL NOT NULL);
                CREATE TABLE local_expiry (
                    partition TEXT NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL, expires_at REAL NOT NULL,
                    PRIMARY KEY (partition, collection, id));
                """)
        }
    }

    /// Where the bytes of `digest` are (or go).
    func blobFile(_ digest: BlobDigest) -> URL {
        blobDirectory.appendingPathComponent(String(digest.rawValue.dropFirst(BlobDigest.prefix.count)))
    }

    /// Keeps `data` as the blob `reference`, pinned until uploaded when `pendingUpload`.
    func keepBlob(_ data: Data, as reference: BlobReference, pendingUpload: Bool) throws {
        try FileManager.default.createDirectory(at: blobDirectory, withIntermediateDirectories: true)
        let file = blobFile(reference.digest)
        if !FileManager.default.fileExists(atPath: file.path) { try data.write(to: file, options: .atomic) }
        try database.write { db in
            let sequence = (try Int64.fetchOne(db, sql: "SELECT max(sequence) FROM blobs") ?? 0) + 1
            try db.execute(
                sql: """
                    INSERT INTO blobs (digest, length, content_type, pending_upload, sequence, last_used) VALUES (?, ?, ?, ?, ?, ?)
                    ON CONFLICT (digest) DO UPDATE SET pending_upload = max(blobs.pending_upload, excluded.pending_upload),
                        last_used = excluded.last_used
                    """,
                arguments: [
                    reference.digest.rawValue, reference.length, reference.contentType, pendingUpload, sequence,
                    Date().timeIntervalSince1970,
                ])
        }
    }

    /// The bytes of a kept blob, marked as just used; `nil` when not kept.
    func keptBlob(_ digest: BlobDigest) throws -> Data? {
        let known = try database.write { db -> Bool in
            try db.execute(sql: "UPDATE blobs SET last_used = ? WHERE digest = ?", arguments: [Date().timeIntervalSince1970, digest.rawValue])
            return db.changesCount > 0
        }
        guard known else { return nil }
        return try? Data(contentsOf: blobFile(digest), options: .mappedIfSafe)
    }

    /// The oldest blob attached and not yet uploaded.
    func nextBlobToUpload() throws -> BlobReference? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM blobs WHERE pending_upload = 1 ORDER BY sequence LIMIT 1").flatMap(Self.blobReference)
        }
    }

    /// The server has the blob (or refused it for good): it is no longer pinned.
    func blobUploaded(_ digest: BlobDigest) throws {
        try database.write { db in
            try db.execute(sql: "UPDATE blobs SET pending_upload = 0 WHERE digest = ?", arguments: [digest.rawValue])
        }
    }

    /// How many attached blobs wait for their upload.
    func pendingBlobCount() throws -> Int {
        try database.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM blobs WHERE pending_upload = 1") ?? 0 }
    }

    /// Removes the least recently used blobs not pinned until the others take at most `limit` bytes.
    func evictBlobs(toFit limit: Int64) throws {
        let removed: [String] = try database.write { db in
            var total = try Int64.fetchOne(db, sql: "SELECT coalesce(sum(length), 0) FROM blobs WHERE pending_upload = 0") ?? 0
            var removed: [String] = []
            guard total > limit else { return removed }
            for row in try Row.fetchAll(db, sql: "SELECT digest, length FROM blobs WHERE pending_upload = 0 ORDER BY last_used") {
                guard total > limit else { break }
                let digest: String = row["digest"]
                try db.execute(sql: "DELETE FROM blobs WHERE digest = ?", arguments: [digest])
                total -= row["length"] as Int64
                removed.append(digest)
            }
            return removed
        }
        for digest in removed {
            if let digest = try? BlobDigest(digest) { try? FileManager.default.removeItem(at: blobFile(digest)) }
        }
    }

    private static func blobReference(_ row: Row) -> BlobReference? {
        guard let digest = try? BlobDigest(row["digest"] as String) else { return nil }
        return BlobReference(digest: digest, length: row["length"], contentType: row["content_type"])
    }

    // MARK: Local expiry

    /// Removes the local copy of an object (an empty collection: of the whole partition) at `date`.
    func setLocalExpiry(_ partition: Partition, _ key: ObjectKey?, at date: Date) throws {
        try database.write { db in
            try db.execute(
                sql: """
                    INSERT INTO local_expiry (partition, collection, id, expires_at) VALUES (?, ?, ?, ?)
                    ON CONFLICT (partition, collection, id) DO UPDATE SET expires_at = excluded.expires_at
                    """,
                arguments: [partition.description, key?.collection ?? "", key?.id ?? "", date.timeIntervalSince1970])
        }
    }

    /// Purges the local copies whose time has come; returns the partitions that changed, and
    /// those closed because they expired whole.
    func purgeLocallyExpired(now: Date = Date()) throws -> (changed: Set<Partition>, closed: Set<Partition>) {
        try database.write { db in
            var changed: Set<Partition> = []
            var closed: Set<Partition> = []
            let due = try Row.fetchAll(db, sql: "SELECT * FROM local_expiry WHERE expires_at <= ?", arguments: [now.timeIntervalSince1970])
            for row in due {
                let name: String = row["partition"]
                let collection: String = row["collection"]
                guard let partition = try? Partition(name) else { continue }
                if collection.isEmpty {
                    try db.execute(sql: "DELETE FROM objects WHERE partition = ?", arguments: [name])
                    try db.execute(sql: "UPDATE partitions SET open = 0, cursor = NULL, confirmed_version = 0 WHERE partition = ?", arguments: [name])
                    try db.execute(sql: "DELETE FROM local_expiry WHERE partition = ?", arguments: [name])
                    closed.insert(partition)
                } else {
                    try db.execute(
                        sql: "DELETE FROM objects WHERE partition = ? AND collection = ? AND id = ?",
                        arguments: [name, collection, row["id"] as String])
                    try db.execute(
                        sql: "DELETE FROM local_expiry WHERE partition = ? AND collection = ? AND id = ?",
                        arguments: [name, collection, row["id"] as String])
                }
                changed.insert(partition)
            }
            return (changed, closed)
        }
    }

    /// When the next local copy expires.
    func nextLocalExpiry() throws -> Date? {
        try database.read { db in
            try Double.fetchOne(db, sql: "SELECT min(expires_at) FROM local_expiry").map(Date.init(timeIntervalSince1970:))
        }
    }
}
