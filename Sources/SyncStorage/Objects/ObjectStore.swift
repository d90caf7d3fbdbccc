import Foundation
import Locking
import Logging
import PartitionSync
import PostgresNIO
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
package final class ObjectStore: Sendable {
    package let client: PostgresClient
    package let configuration: StorageConfiguration
    package let logger: Logger
    private let cachedEpoch = Locked<UUID?>(nil)
    let announcer: Announcer
    private let interest = Locked(EventInterest.all)
    private let label = Locked<ChangeEvent.Operation?>(nil)
    private let announcing = Locked(true)
    private let observers = Locked<[@Sendable (Commit) -> Void]>([])
    private let screen = Locked<ChangeScreen?>(nil)
    /// The names of the declared element indexes (``ObjectIndex/arrayElements(collection:path:field:)``),
    /// set by ``createIndexes(_:)``: their searches read `psync_element_entries`.
    private let elementIndexes = Locked<Set<String>>([])
    /// How many import batches were inserted as new, and how many written again reading every key.
    let importPaths = Locked<(new: Int, again: Int)>((0, 0))
    /// The application's counters, and whether raises of them are written beside the bodies
    /// (``declareCounters(_:)``, ``raisesCountersApart(_:)``).
    private let counterState = Locked<(counters: [ObjectCounter], apart: Bool)>(([], false))

    /// Whether the element index of that name is declared (its entries are kept).
    func hasElementIndex(_ name: String) -> Bool {
        elementIndexes.withLock { $0.contains(name) }
    }

    /// The declared element indexes this store's searches read.
    package var elementIndexNames: Set<String> { elementIndexes.withLock { $0 } }

    func setElementIndexes(_ names: Set<String>) {
        elementIndexes.withLock { $0 = names }
    }

    /// Declares the application's counters (``ObjectCounter``), checked against each other and
    /// the declared `indexes`: a declaration that does not check throws, naming it.
    package func declareCounters(_ counters: [ObjectCounter], indexes: [ObjectIndex]) throws(SyncError) {
        try ObjectCounter.check(counters, indexes: indexes)
        counterState.withLock { $0.counters = counters }
    }

    /// Whether raises of the declared counters are written beside the bodies from now on
    /// (`true`), or into the bodies as any other write (`false`, the default). A server turns
    /// it on once no instance of an earlier build, which reads bodies without their counters,
    /// shares the database (``InstanceRegistry``).
    package func raisesCountersApart(_ enabled: Bool) {
        counterState.withLock { $0.apart = enabled }
    }

    /// The declared counters, and whether their raises are written beside the bodies.
    var counters: (declared: [ObjectCounter], apart: Bool) {
        counterState.withLock { ($0.counters, $0.apart && configuration.countersPerObject > 0) }
    }

    /// The streaming replicas snapshots and catch-ups may be read from, if any.
    package let replicas: ReadReplicas?

    package init(client: PostgresClient, configuration: StorageConfiguration = .init(), replicas: ReadReplicas? = nil, logger: Logger) {
        self.client = client
        self.replicas = replicas
        self.configuration = configuration
        self.logger = logger
        self.announcer = Announcer(client: client, logger: logger)
    }

    /// Which change events write transactions record from now on. Default: ``EventInterest/all``.
    package func recordEvents(_ interest: EventInterest) {
        self.interest.withLock { $0 = interest }
    }

    /// Which change events write transactions record.
    package var eventInterest: EventInterest { interest.withLock { $0 } }

    /// From now on, every object change this store writes is recorded as an event of
    /// `operation` instead of insert, update, replace or delete (`nil`: as what it is). The
    /// store of `psync import` labels its writes ``ChangeEvent/Operation/import``.
    package func labelObjectEvents(as operation: ChangeEvent.Operation?) {
        label.withLock { $0 = operation }
    }

    /// The label of object events (``labelObjectEvents(as:)``), if any.
    package var objectEventLabel: ChangeEvent.Operation? { label.withLock { $0 } }

    /// Calls `observer` after each write transaction of this store commits, in the committing
    /// task, with what it changed: how this process's subscribers hear of its own commits
    /// without waiting for the notification. It must be quick and must not block.
    package func observeCommits(_ observer: @escaping @Sendable (Commit) -> Void) {
        observers.withLock { $0.append(observer) }
    }

    /// Which of the changes a transaction lets go of (``WriteTransaction/apply(_:)`` in chunks)
    /// its commit still carries for the observers (``Commit/PartitionChanges/kept``): those
    /// `screen` accepts. Without a screen, none.
    package func screenReleasedChanges(_ screen: ChangeScreen) {
        self.screen.withLock { $0 = screen }
    }

    /// The screen of released changes, if any.
    var releasedChangeScreen: ChangeScreen? { screen.withLock { $0 } }

    package var limits: Limits { configuration.limits }

    /// The PostgreSQL notification channel on which every commit announces, per partition it
    /// changed, `"<version>:<partition>"`.
    ///
    /// The announcement is sent after COMMIT, not inside the writing transaction: PostgreSQL
    /// commits notifying transactions one at a time (a database-wide lock held across the WAL
    /// flush), which would cap every write at the speed of one flush. The writer does not wait
    /// for it either: the ``Announcer`` sends the payloads of many commits in one statement.
    /// A process that dies in between leaves the commit unannounced: listeners also poll the
    /// versions of the partitions they follow (``SubscriptionHub``), and the trigger sequencer
    /// polls for unnumbered events.
    package static let notificationChannel = "psync_changes"

    /// Queues `payloads` for ``notificationChannel``; they are sent shortly, outside any
    /// transaction. A failure is logged, not thrown: what they announce is committed already,
    /// and the pollers find it.
    func announce(_ payloads: [String]) {
        guard announcing.withLock({ $0 }) else { return }
        announcer.announce(payloads)
    }

    /// Whether commits are announced with NOTIFY (the default). An instance that knows it is
    /// alone on the database turns it off (``InstanceRegistry``): its own subscribers and
    /// triggers hear of its commits in process.
    package func announceCommits(_ enabled: Bool) {
        announcing.withLock { $0 = enabled }
    }

    /// The identity of this database, carried in every cursor.
    package func epoch() async throws -> UUID {
        if let epoch = cachedEpoch.withLock({ $0 }) { return epoch }
        let rows = try await client.fetch("SELECT epoch FROM psync_meta", logger: logger)
        for try await epoch in rows.decode(UUID.self) {
            cachedEpoch.withLock { $0 = epoch }
            return epoch
        }
        throw SyncError(.internal, "the database has no epoch; run the migrations")
    }

    /// The identity of this database if this store has read it already.
    package var knownEpoch: UUID? { cachedEpoch.withLock { $0 } }

    func resetCachedEpoch() {
        cachedEpoch.withLock { $0 = nil }
    }

    /// The newest committed version of a partition (0 when nothing was ever written to it).
    package func headVersion(of partition: Partition) async throws -> Int64 {
        try await head(of: partition).version
    }

    /// The newest committed version of a partition (0 when nothing was ever written to it), and
    /// the timelines its versions were written on.
    package func head(of partition: Partition) async throws -> (version: Int64, history: PartitionHistory) {
        let rows = try await client.fetch(
            """
            SELECT version, timeline, past_timelines, past_ends FROM psync_partitions WHERE partition = \(partition.description)
            """, logger: logger)
        for try await (version, timeline, pastTimelines, pastEnds) in rows.decode((Int64, Int32, [Int32], [Int64]).self) {
            return (version, try PartitionHistory(timeline: timeline, pastTimelines: pastTimelines, pastEnds: pastEnds))
        }
        return (0, PartitionHistory())
    }

    /// The newest committed version of each partition that was ever written to.
    package func headVersions(of partitions: [Partition]) async throws -> [(Partition, Int64)] {
        let rows = try await client.fetch(
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
    package func objects(_ keys: [ObjectKey]) async throws -> [(partition: String, object: SyncObject)] {
        guard !keys.isEmpty else { return [] }
        let rows = try await client.fetch(
            """
            SELECT o.collection, o.id, o.partition, \(unescaped: StoredBody.version()), \(unescaped: StoredBody.sql())
            FROM psync_objects o
            JOIN unnest(\(keys.map(\.collection))::text[], \(keys.map(\.id))::text[]) AS k(collection, id)
              ON o.collection = k.collection AND o.id = k.id
            \(unescaped: StoredBody.join())
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

    /// The partition of each live (not deleted) object among `keys`; absent and deleted ones
    /// are left out. The hub asks it for the objects permission decisions found absent.
    package func livePartitions(of keys: [ObjectKey]) async throws -> [ObjectKey: Partition] {
        guard !keys.isEmpty else { return [:] }
        let rows = try await client.fetch(
            """
            SELECT o.collection, o.id, o.partition
            FROM psync_objects o
            JOIN unnest(\(keys.map(\.collection))::text[], \(keys.map(\.id))::text[]) AS k(collection, id)
              ON o.collection = k.collection AND o.id = k.id
            WHERE o.body IS NOT NULL
            """, logger: logger)
        var result: [ObjectKey: Partition] = [:]
        for try await (collection, id, partition) in rows.decode((String, String, String).self) {
            result[ObjectKey(uncheckedCollection: collection, id: id)] = try Partition(partition)
        }
        return result
    }

    /// Runs `body` in one transaction and commits it. A transaction that loses a deadlock or a
    /// serialization conflict is retried from the start (so `body` must not have effects
    /// outside the database); any other error rolls back and is rethrown.
    @discardableResult
    package func withWriteTransaction<Result: Sendable>(
        author: String,
        depth: Int = 0,
        _ body: (WriteTransaction) async throws -> Result
    ) async throws -> Result {
        try await withWriteTransaction(author: author, depth: depth, ending: { transaction in
            let result = try await body(transaction)
            if let conflict = try await transaction.finish() { throw conflict.error }
            return .commit(result)
        })
    }

    /// Runs `body` in one transaction, which `body` ends: with ``TransactionEnd/commit(_:)``
    /// after it called ``WriteTransaction/finish()`` (which wrote what is staged, and found no
    /// conflict), or ``TransactionEnd/rollBack(_:)``. Retried as ``withWriteTransaction(author:depth:_:)``.
    ///
    /// `beginsWithLock`: `body`'s first statement is ``WriteTransaction/lockAndLoad(_:_:lockTimeout:)``,
    /// so it is sent right behind BEGIN, without waiting for BEGIN's answer: postgres-nio sends
    /// it when PostgreSQL answers BEGIN, and the task is woken once for the two (an upload's
    /// transaction; docs/PERFORMANCE.md). The lock refuses to run if BEGIN failed.
    func withWriteTransaction<Result: Sendable>(
        author: String,
        depth: Int = 0,
        beginsWithLock: Bool = false,
        ending body: (WriteTransaction) async throws -> TransactionEnd<Result>
    ) async throws -> Result {
        var attempt = 1
        while true {
            do {
                return try await client.withOpenConnection { connection in
                    let transaction = WriteTransaction(connection: connection, store: self, author: author, depth: depth)
                    if beginsWithLock {
                        transaction.pendingBegin = connection.query(WriteTransaction.begin, logger: logger)
                    } else {
                        try await connection.query(WriteTransaction.begin, logger: logger)
                    }
                    do {
                        let end = try await body(transaction)
                        try await transaction.beginAnswered()
                        switch end {
                        case .commit(let result):
                            try await connection.query("COMMIT", logger: logger)
                            committed(transaction)
                            await closeIfOutgrown(transaction, connection)
                            return result
                        case .rollBack(let result):
                            try await connection.query("ROLLBACK", logger: logger)
                            await closeIfOutgrown(transaction, connection)
                            return result
                        }
                    } catch {
                        await connection.rollBack(after: error, logger: logger)
                        await closeIfOutgrown(transaction, connection)
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

/// How the body of ``ObjectStore/withWriteTransaction(author:depth:ending:)`` ends its transaction.
enum TransactionEnd<Result: Sendable>: Sendable {
    case commit(Result)
    case rollBack(Result)
}

extension ObjectStore {
    /// Closes `connection` (the pool then forgets it and opens another when it needs one) if
    /// `transaction` sent it a statement of more than four times
    /// ``StorageConfiguration/statementBytes``: postgres-nio keeps a connection's send buffer
    /// at the largest size it ever had, so a few connections that once carried large uploads
    /// would hold their size in memory for as long as they live.
    func closeIfOutgrown(_ transaction: WriteTransaction, _ connection: PostgresConnection) async {
        guard transaction.largestStatement > 4 * configuration.statementBytes else { return }
        logger.debug("closing a connection that carried a large statement", metadata: ["bytes": "\(transaction.largestStatement)"])
        await connection.finishClosing()
    }

    /// After a commit: tells this process's observers, and queues the announcement for the others.
    func committed(_ transaction: WriteTransaction) {
        let observers = self.observers.withLock { $0 }
        var notifications: [ChangeNotification]
        if observers.isEmpty {
            // Nobody in this process reads the changes (`psync import`): the announcement
            // needs only the partitions' versions, not the changes gathered and sorted per
            // partition (7 % of an import's CPU, its batches touching hundreds of partitions).
            notifications = transaction.record.changedPartitions.map { .committed($0, version: transaction.versions[$0]!) }
        } else {
            let commit = transaction.commit
            guard !commit.partitions.isEmpty || commit.recordedEvents > 0 else { return }
            for observer in observers { observer(commit) }
            notifications = commit.partitions.map { .committed($0.partition, version: $0.version) }
        }
        guard !notifications.isEmpty || transaction.record.recordedEvents > 0 else { return }
        if transaction.record.recordedEvents > 0 { notifications.append(.eventsRecorded) }
        announce(notifications.map(\.payload))
    }
}

extension PSQLError {
    /// A deadlock or serialization failure: the transaction may succeed when run again.
    var isTransient: Bool {
        guard let state = serverInfo?[.sqlState] else { return false }
        return state == "40P01" || state == "40001"
    }
}
