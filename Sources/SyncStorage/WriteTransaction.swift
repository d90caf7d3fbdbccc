import Logging
import PostgresNIO
import SyncProtocol

/// An open write transaction of the storage engine, handed to the closure of
/// ``ObjectStore/withWriteTransaction(author:_:)``.
///
/// Each partition written in the transaction is locked and its version bumped once, on the
/// first write; the lock is held until commit, so versions of a partition commit in order.
/// Partitions are locked in sorted order when several are written at once.
public final class WriteTransaction {
    /// The connection in its open transaction, for hooks that read with SQL.
    public let connection: PostgresConnection
    /// Who writes: recorded with the changes.
    public let author: String
    let store: ObjectStore
    /// The store's logger.
    public var logger: Logger { store.logger }

    /// The version each partition written so far carries in this transaction.
    public private(set) var versions: [Partition: Int64] = [:]
    /// Every object change written so far, in order.
    public private(set) var changes: [(partition: Partition, version: Int64, change: ObjectChange)] = []

    init(connection: PostgresConnection, store: ObjectStore, author: String) {
        self.connection = connection
        self.store = store
        self.author = author
    }

    /// Locks the partitions not yet locked in this transaction, in sorted order, and bumps
    /// their versions; returns the version of each.
    @discardableResult
    public func lock(_ partitions: [Partition]) async throws -> [Partition: Int64] {
        let missing = Set(partitions).subtracting(versions.keys).sorted()
        if !missing.isEmpty {
            let names = missing.map(\.description)
            let rows = try await connection.query(
                """
                INSERT INTO psync_partitions AS p (partition, version)
                SELECT name, 1 FROM unnest(\(names)::text[]) AS t(name) ORDER BY name
                ON CONFLICT (partition) DO UPDATE SET version = p.version + 1, updated_at = now()
                RETURNING partition, version
                """, logger: logger)
            for try await (name, version) in rows.decode((String, Int64).self) {
                versions[try Partition(name)] = version
            }
        }
        return versions.filter { partitions.contains($0.key) }
    }

    /// The stored state and partition of each key; keys never stored are left out.
    public func load(_ keys: [ObjectKey]) async throws -> [ObjectKey: (partition: String, state: DocumentState)] {
        guard !keys.isEmpty else { return [:] }
        let rows = try await connection.query(
            """
            SELECT o.collection, o.id, o.partition, o.body
            FROM psync_objects o
            JOIN unnest(\(keys.map(\.collection))::text[], \(keys.map(\.id))::text[]) AS k(collection, id)
              ON o.collection = k.collection AND o.id = k.id
            """, logger: logger)
        var result: [ObjectKey: (partition: String, state: DocumentState)] = [:]
        for try await (collection, id, partition, body) in rows.decode((String, String, String, JSONB?).self) {
            let state: DocumentState = body?.value.objectValue.map(DocumentState.live) ?? .deleted
            result[ObjectKey(uncheckedCollection: collection, id: id)] = (partition, state)
        }
        return result
    }

    /// Applies operations of one partition against the current stored state and writes the
    /// objects they change. `validate` sees the computed changes before they are written
    /// and may throw to refuse them. Returns the changes written.
    @discardableResult
    public func apply(
        _ operations: [SyncOperation],
        in partition: Partition,
        validate: ((_ changes: [ObjectChange], _ transaction: WriteTransaction) async throws -> Void)? = nil
    ) async throws -> [ObjectChange] {
        try store.limits.check(operationCount: operations.count)
        let version = try await lock([partition])[partition]!
        // Read after the lock, in a new statement: under READ COMMITTED it sees every commit
        // that preceded ours on this partition.
        let keys = OperationApplier.keys(of: operations)
        let stored = try await load(keys)
        var current: [ObjectKey: DocumentState] = [:]
        for (key, entry) in stored {
            guard entry.partition == partition.description else {
                throw SyncError(.partitionMismatch, "\(key) belongs to another partition than \(partition)")
            }
            current[key] = entry.state
        }
        let changes = try OperationApplier(partition: partition, limits: store.limits).apply(operations, to: current)
        try await validate?(changes, self)
        try await write(changes, in: partition, version: version)
        return changes
    }

    /// Announces the new version of every partition this transaction changed, on the channel
    /// ``ObjectStore/notificationChannel``; PostgreSQL delivers the notifications at commit,
    /// and drops them on rollback.
    func notifyChanges() async throws {
        let changed = Set(changes.map(\.partition))
        guard !changed.isEmpty else { return }
        let payloads = changed.sorted().map { "\(versions[$0]!):\($0)" }
        try await connection.query(
            "SELECT pg_notify(\(ObjectStore.notificationChannel), payload) FROM unnest(\(payloads)::text[]) AS t(payload)",
            logger: logger)
    }

    /// Writes computed changes as they are (no operations applied): live bodies and tombstones.
    func write(_ changes: [ObjectChange], in partition: Partition, version: Int64) async throws {
        guard !changes.isEmpty else { return }
        let collections = changes.map(\.key.collection)
        let ids = changes.map(\.key.id)
        let bodies = changes.map { EncodedJSONB(bytes: $0.encodedBody ?? Array("null".utf8)) }
        let deleted = changes.map { $0.encodedBody == nil }
        let rows = try await connection.query(
            """
            INSERT INTO psync_objects AS o (collection, id, partition, version, body)
            SELECT c, i, \(partition.description), \(version), CASE WHEN d THEN NULL ELSE b END
            FROM unnest(\(collections)::text[], \(ids)::text[], \(bodies)::jsonb[], \(deleted)::boolean[]) AS t(c, i, b, d)
            ON CONFLICT (collection, id) DO UPDATE
              SET version = EXCLUDED.version, body = EXCLUDED.body, updated_at = now()
              WHERE o.partition = EXCLUDED.partition
            RETURNING 1
            """, logger: logger)
        var written = 0
        for try await _ in rows { written += 1 }
        guard written == changes.count else {
            // Another transaction created one of these keys in another partition meanwhile.
            throw SyncError(.partitionMismatch, "an object of this upload was created in another partition meanwhile")
        }
        for change in changes {
            self.changes.append((partition, version, change))
        }
    }
}
