import Foundation
import Logging
import PostgresNIO
import Synchronization
import SyncProtocol

/// The storage engine: objects in partitions on PostgreSQL, read as commit-ordered change
/// batches and written by atomic, idempotent uploads.
///
/// ```swift
/// let store = ObjectStore(client: client, logger: logger)
/// let result = try await store.upload(Upload(
///     partition: try Partition("conversation=c-42"),
///     operations: [.put(try ObjectKey(collection: "ChatMessage", id: "m-1"), body: ["text": "hi"])],
///     principal: "user-1", requestId: "r-1"))
/// let batch = try await store.changes(in: result.partition, after: nil)
/// ```
public final class ObjectStore: Sendable {
    public let client: PostgresClient
    public let configuration: StorageConfiguration
    let logger: Logger
    private let cachedEpoch = Mutex<UUID?>(nil)

    public init(client: PostgresClient, configuration: StorageConfiguration = .init(), logger: Logger) {
        self.client = client
        self.configuration = configuration
        self.logger = logger
    }

    public var limits: Limits { configuration.limits }

    /// The PostgreSQL notification channel on which every commit announces, per partition it
    /// changed, `"<version>:<partition>"`.
    ///
    /// The announcement is sent right after COMMIT, in a statement of its own, not inside the
    /// writing transaction: PostgreSQL commits notifying transactions one at a time (a
    /// database-wide lock held across the WAL flush), which would cap every write at the speed
    /// of one flush. A notification-only transaction writes no WAL of its own, so the lock is
    /// brief. A process that dies between the two leaves the commit unannounced: listeners
    /// also poll the versions of the partitions they follow (``SubscriptionHub``), and the
    /// trigger sequencer polls for unnumbered events.
    public static let notificationChannel = "psync_changes"

    /// Sends `payloads` on ``notificationChannel`` outside any transaction. A failure is
    /// logged, not thrown: what it announces is committed already, and the pollers find it.
    func announce(_ payloads: [String], on connection: PostgresConnection) async {
        guard !payloads.isEmpty else { return }
        do {
            let rows = try await connection.query(
                "SELECT pg_notify(\(Self.notificationChannel), payload) FROM unnest(\(payloads)::text[]) AS t(payload)",
                logger: logger)
            for try await _ in rows {}
        } catch {
            logger.warning("announcing a commit failed; listeners will find it by polling", metadata: ["error": "\(error)"])
        }
    }

    /// The identity of this database, carried in every cursor.
    public func epoch() async throws -> UUID {
        if let epoch = cachedEpoch.withLock({ $0 }) { return epoch }
        let rows = try await client.query("SELECT epoch FROM psync_meta", logger: logger)
        for try await epoch in rows.decode(UUID.self) {
            cachedEpoch.withLock { $0 = epoch }
            return epoch
        }
        throw SyncError(.internal, "the database has no epoch; run the migrations")
    }

    func resetCachedEpoch() {
        cachedEpoch.withLock { $0 = nil }
    }

    /// The newest committed version of a partition (0 when nothing was ever written to it).
    public func headVersion(of partition: Partition) async throws -> Int64 {
        let rows = try await client.query(
            "SELECT version FROM psync_partitions WHERE partition = \(partition.description)", logger: logger)
        for try await version in rows.decode(Int64.self) { return version }
        return 0
    }

    /// The newest committed version of each partition that was ever written to.
    public func headVersions(of partitions: [Partition]) async throws -> [(Partition, Int64)] {
        let rows = try await client.query(
            "SELECT partition, version FROM psync_partitions WHERE partition = ANY(\(partitions.map(\.description))::text[])",
            logger: logger)
        var result: [(Partition, Int64)] = []
        for try await (name, version) in rows.decode((String, Int64).self) {
            result.append((try Partition(name), version))
        }
        return result
    }

    /// The current state of each object, live or tombstone, whatever its partition; keys
    /// never stored are left out. Used to send compensating states with a rejection.
    public func objects(_ keys: [ObjectKey]) async throws -> [(partition: String, object: SyncObject)] {
        guard !keys.isEmpty else { return [] }
        let rows = try await client.query(
            """
            SELECT o.collection, o.id, o.partition, o.version, o.body
            FROM psync_objects o
            JOIN unnest(\(keys.map(\.collection))::text[], \(keys.map(\.id))::text[]) AS k(collection, id)
              ON o.collection = k.collection AND o.id = k.id
            ORDER BY o.collection, o.id
            """, logger: logger)
        var result: [(partition: String, object: SyncObject)] = []
        for try await (collection, id, partition, version, body) in rows.decode((String, String, String, Int64, JSONB?).self) {
            let object = SyncObject(
                key: ObjectKey(uncheckedCollection: collection, id: id), version: version, body: body?.value.objectValue)
            result.append((partition, object))
        }
        return result
    }

    /// Runs `body` in one transaction and commits it. A transaction that loses a deadlock or a
    /// serialization conflict is retried from the start (so `body` must not have effects
    /// outside the database); any other error rolls back and is rethrown.
    @discardableResult
    public func withWriteTransaction<Result: Sendable>(
        author: String,
        depth: Int = 0,
        _ body: (WriteTransaction) async throws -> Result
    ) async throws -> Result {
        var attempt = 1
        while true {
            do {
                return try await client.withConnection { connection in
                    let transaction = WriteTransaction(connection: connection, store: self, author: author, depth: depth)
                    try await connection.query("BEGIN", logger: logger)
                    do {
                        let result = try await body(transaction)
                        try await transaction.finish()
                        try await connection.query("COMMIT", logger: logger)
                        await announce(transaction.announcements, on: connection)
                        return result
                    } catch {
                        _ = try? await connection.query("ROLLBACK", logger: logger)
                        throw error
                    }
                }
            } catch let error as PSQLError where error.isTransient && attempt < configuration.transactionRetries {
                logger.debug("retrying transaction", metadata: ["sqlstate": "\(error.serverInfo?[.sqlState] ?? "")"])
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...(10 * attempt))))
                attempt += 1
            }
        }
    }
}

extension PSQLError {
    /// A deadlock or serialization failure: the transaction may succeed when run again.
    var isTransient: Bool {
        guard let state = serverInfo?[.sqlState] else { return false }
        return state == "40P01" || state == "40001"
    }
}
