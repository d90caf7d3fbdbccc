import Foundation
import GRDB
import SyncProtocol

/// The client's durable state in SQLite: the server's objects of open partitions with their
/// cursors, the queue of uploads not yet confirmed, and the credentials. A client restarted
/// offline shows its data and its pending writes; online again, it downloads only what changed
/// since its cursors.
///
/// What the app sees of a partition is the server's objects with the pending uploads of that
/// partition replayed on top, in order, with the same `OperationApplier` the server runs.
///
/// Several processes may share one store (a `watch` and a `read` of the same home): it is a
/// `DatabasePool` in WAL mode, whose writers wait for each other (``busyTimeout``) instead of
/// failing with `SQLITE_BUSY`, and ``otherProcessesChanges()`` tells when another process
/// committed, so a client shows what the other did.
final class LocalStore: Sendable {
    /// How long a write waits for another process's write to end before it fails.
    static let busyTimeout: TimeInterval = 30

    let database: any DatabaseWriter
    /// The folder of blob files: beside the SQLite file, or a temporary one for a store in memory.
    let blobDirectory: URL

    /// An upload in the queue.
    struct PendingUpload: Sendable, Hashable {
        var sequence: Int64
        var requestId: String
        var partition: Partition
        var operations: [SyncOperation]
        /// Set once acknowledged: the partition version the upload committed at. The upload is
        /// kept (and replayed) until the partition's copy is complete up to that version.
        var ackedVersion: Int64?
    }

    init(path: String?) throws {
        blobDirectory = path.map { URL(fileURLWithPath: $0 + ".blobs", isDirectory: true) }
            ?? FileManager.default.temporaryDirectory.appendingPathComponent("psync-blobs-\(UUID().uuidString)", isDirectory: true)
        if let path {
            try FileManager.default.createDirectory(
                at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
            var configuration = Configuration()
            configuration.busyMode = .timeout(Self.busyTimeout)
            database = try DatabasePool(path: path, configuration: configuration)
        } else {
            database = try DatabaseQueue()
        }
        var migrator = DatabaseMigrator()
        migrator.registerMigration("1") { db in
            try db.execute(sql: """
                CREATE TABLE objects (
                    partition TEXT NOT NULL, collection TEXT NOT NULL, id TEXT NOT NULL,
                    version INTEGER NOT NULL, body TEXT, PRIMARY KEY (collection, id));
                CREATE INDEX objects_by_partition ON objects (partition);
                CREATE TABLE partitions (
                    partition TEXT PRIMARY KEY, cursor TEXT, confirmed_version INTEGER NOT NULL DEFAULT 0,
                    open INTEGER NOT NULL DEFAULT 0);
                CREATE TABLE pending (
                    sequence INTEGER PRIMARY KEY AUTOINCREMENT, request_id TEXT NOT NULL UNIQUE,
                    partition TEXT NOT NULL, operations TEXT NOT NULL, acked_version INTEGER);
                CREATE TABLE settings (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                """)
        }
        Self.migrateBlobs(&migrator)
        Self.migrateDrafts(&migrator)
        try migrator.migrate(database)
    }

    /// A number that changes each time another process commits to this store (SQLite's
    /// `data_version`, read on the writing connection, which this process's own commits leave
    /// alone); `nil` for a store in memory.
    func otherProcessesChanges() throws -> Int? {
        guard let pool = database as? DatabasePool else { return nil }
        return try pool.writeWithoutTransaction { db in try Int.fetchOne(db, sql: "PRAGMA data_version") }
    }

    // MARK: Settings

    func setting(_ key: String) throws -> String? {
        try database.read { db in try String.fetchOne(db, sql: "SELECT value FROM settings WHERE key = ?", arguments: [key]) }
    }

    func setSettings(_ values: [String: String?]) throws {
        try database.write { db in
            for (key, value) in values {
                if let value {
                    try db.execute(sql: "INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", arguments: [key, value])
                } else {
                    try db.execute(sql: "DELETE FROM settings WHERE key = ?", arguments: [key])
                }
            }
        }
    }

    // MARK: Partitions

    /// Marks a partition open (kept and subscribed) or closed; returns its stored cursor.
    @discardableResult
    func setOpen(_ partition: Partition, _ open: Bool) throws -> SyncProtocol.Cursor? {
        try database.write { db in
            try db.execute(
                sql: "INSERT INTO partitions (partition, open) VALUES (?, ?) ON CONFLICT (partition) DO UPDATE SET open = excluded.open",
                arguments: [partition.description, open])
            return try String.fetchOne(db, sql: "SELECT cursor FROM partitions WHERE partition = ?", arguments: [partition.description])
                .map(SyncProtocol.Cursor.init(rawValue:))
        }
    }

    /// The open partitions and their cursors.
    func openPartitions() throws -> [(Partition, SyncProtocol.Cursor?)] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT partition, cursor FROM partitions WHERE open = 1").compactMap { row in
                guard let partition = try? Partition(row["partition"] as String) else { return nil }
                return (partition, (row["cursor"] as String?).map(SyncProtocol.Cursor.init(rawValue:)))
            }
        }
    }

    func isOpen(_ partition: Partition) throws -> Bool {
        try database.read { db in
            try Bool.fetchOne(db, sql: "SELECT open FROM partitions WHERE partition = ?", arguments: [partition.description]) ?? false
        }
    }

    /// Applies a change batch of the server: a reset drops the partition's copy first; an
    /// up-to-date batch confirms the acknowledged uploads it covers.
    func apply(_ batch: ChangeBatch) throws {
        try database.write { db in
            let partition = batch.partition.description
            if batch.reset {
                try db.execute(sql: "DELETE FROM objects WHERE partition = ?", arguments: [partition])
            }
            for object in batch.objects {
                try db.execute(
                    sql: """
                        INSERT INTO objects (partition, collection, id, version, body) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (collection, id) DO UPDATE SET partition = excluded.partition, version = excluded.version, body = excluded.body
                        """,
                    arguments: [partition, object.key.collection, object.key.id, object.version, object.body.map { JSONValue.object($0).jsonString }])
            }
            var confirmed: Int64?
            if batch.upToDate, let version = batch.version { confirmed = version }
            try db.execute(
                sql: """
                    INSERT INTO partitions (partition, cursor, confirmed_version) VALUES (?, ?, ?)
                    ON CONFLICT (partition) DO UPDATE SET cursor = excluded.cursor,
                        confirmed_version = max(partitions.confirmed_version, excluded.confirmed_version)
                    """,
                arguments: [partition, batch.cursor.rawValue, confirmed ?? 0])
            if let confirmed {
                try db.execute(
                    sql: "DELETE FROM pending WHERE partition = ? AND acked_version IS NOT NULL AND acked_version <= ?",
                    arguments: [partition, confirmed])
            }
        }
    }

    /// Replaces the stored state of objects with the server's (compensating states of a rejection).
    func replace(_ objects: [SyncObject], in partition: Partition) throws {
        try database.write { db in
            for object in objects {
                if object.isDeleted {
                    try db.execute(sql: "DELETE FROM objects WHERE collection = ? AND id = ?", arguments: [object.key.collection, object.key.id])
                } else {
                    try db.execute(
                        sql: """
                            INSERT INTO objects (partition, collection, id, version, body) VALUES (?, ?, ?, ?, ?)
                            ON CONFLICT (collection, id) DO UPDATE SET version = excluded.version, body = excluded.body
                            """,
                        arguments: [partition.description, object.key.collection, object.key.id, object.version, object.body.map { JSONValue.object($0).jsonString }])
                }
            }
        }
    }

    /// The server's objects of a partition.
    func serverObjects(of partition: Partition) throws -> [ObjectKey: SyncObject] {
        try database.read { db in
            var result: [ObjectKey: SyncObject] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT collection, id, version, body FROM objects WHERE partition = ?", arguments: [partition.description]) {
                let object = Self.object(row)
                result[object.key] = object
            }
            return result
        }
    }

    /// The server's objects of `partition` among `keys` (read by key, not the whole partition).
    func serverObjects(of partition: Partition, keys: Set<ObjectKey>) throws -> [ObjectKey: SyncObject] {
        try database.read { db in
            var result: [ObjectKey: SyncObject] = [:]
            for key in keys {
                let row = try Row.fetchOne(
                    db, sql: "SELECT collection, id, version, body FROM objects WHERE collection = ? AND id = ? AND partition = ?",
                    arguments: [key.collection, key.id, partition.description])
                if let row { result[key] = Self.object(row) }
            }
            return result
        }
    }

    private static func object(_ row: Row) -> SyncObject {
        let key = ObjectKey(uncheckedCollection: row["collection"], id: row["id"])
        let body = (row["body"] as String?).flatMap { try? JSONParser(maximumDepth: 512).parse($0).objectValue }
        return SyncObject(key: key, version: row["version"], body: body)
    }

    // MARK: The upload queue

    /// Queues an upload; returns its request id.
    func enqueue(_ operations: [SyncOperation], in partition: Partition) throws -> String {
        let requestId = UUID().uuidString.lowercased()
        let text = JSONValue.array(operations.map(\.json)).jsonString
        try database.write { db in
            try db.execute(
                sql: "INSERT INTO pending (request_id, partition, operations) VALUES (?, ?, ?)",
                arguments: [requestId, partition.description, text])
        }
        return requestId
    }

    /// Uploads of a partition still replayed over its server copy, in order.
    func pending(in partition: Partition) throws -> [PendingUpload] {
        try database.read { db in
            try Row.fetchAll(db, sql: "SELECT * FROM pending WHERE partition = ? ORDER BY sequence", arguments: [partition.description])
                .compactMap(Self.upload)
        }
    }

    /// The oldest upload not yet acknowledged.
    func nextToSend() throws -> PendingUpload? {
        try database.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM pending WHERE acked_version IS NULL ORDER BY sequence LIMIT 1").flatMap(Self.upload)
        }
    }

    /// How many uploads wait for an acknowledgement, and attached blobs for their upload.
    func unacknowledgedCount() throws -> Int {
        try database.read { db in
            try Int.fetchOne(
                db,
                sql: "SELECT (SELECT count(*) FROM pending WHERE acked_version IS NULL) + (SELECT count(*) FROM blobs WHERE pending_upload = 1)"
            ) ?? 0
        }
    }

    /// Records an acknowledgement: an open partition keeps the upload until its copy covers
    /// `version`; any other forgets it at once.
    func acknowledge(_ requestId: String, version: Int64?) throws {
        try database.write { db in
            let partition = try String.fetchOne(db, sql: "SELECT partition FROM pending WHERE request_id = ?", arguments: [requestId])
            let open = try partition.flatMap { try Bool.fetchOne(db, sql: "SELECT open FROM partitions WHERE partition = ?", arguments: [$0]) } ?? false
            let confirmed = try partition.flatMap {
                try Int64.fetchOne(db, sql: "SELECT confirmed_version FROM partitions WHERE partition = ?", arguments: [$0])
            } ?? 0
            if open, let version, version > confirmed {
                try db.execute(sql: "UPDATE pending SET acked_version = ? WHERE request_id = ?", arguments: [version, requestId])
            } else {
                try db.execute(sql: "DELETE FROM pending WHERE request_id = ?", arguments: [requestId])
            }
        }
    }

    /// Removes a refused upload.
    func remove(_ requestId: String) throws {
        try database.write { db in try db.execute(sql: "DELETE FROM pending WHERE request_id = ?", arguments: [requestId]) }
    }

    private static func upload(_ row: Row) -> PendingUpload? {
        guard let partition = try? Partition(row["partition"] as String),
            let list = try? JSONParser(maximumDepth: 512).parse(row["operations"] as String).arrayValue
        else { return nil }
        let operations = list.compactMap { try? SyncOperation(json: $0) }
        return PendingUpload(
            sequence: row["sequence"], requestId: row["request_id"], partition: partition, operations: operations,
            ackedVersion: row["acked_version"])
    }
}
