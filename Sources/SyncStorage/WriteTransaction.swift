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
    /// The trigger depth of the changes written from now on: 0 for clients, one more than the
    /// handled event's for a trigger's writes. A trigger handling several events in one
    /// transaction sets it before each.
    public var depth: Int
    let store: ObjectStore
    /// The store's logger.
    public var logger: Logger { store.logger }

    /// The version each partition written so far carries in this transaction.
    public private(set) var versions: [Partition: Int64] = [:]
    /// Every object change written so far, in order.
    public private(set) var changes: [(partition: Partition, version: Int64, change: ObjectChange)] = []
    /// Events to record at commit, in order.
    var events: [PendingEvent] = []
    /// Objects read or written in this transaction (`nil`: not stored), so a key is read from
    /// the database once. Entries of a partition are dropped when it is locked, and entries of
    /// keys not stored then too: only a read after the lock sees every commit before ours.
    private var known: [ObjectKey: (partition: String, state: DocumentState)?] = [:]
    /// How many object changes this transaction has made so far, written or staged.
    public var changeCount: Int { changes.count + staged.count }
    /// Changes applied by ``stage(_:in:validate:)`` and not written yet, with the trigger
    /// depth they were made at.
    private var staged: [(partition: Partition, version: Int64, change: ObjectChange, depth: Int)] = []
    /// Every object this transaction changed, staged or written: where it is and what it is now.
    private var touched: [ObjectKey: (partition: Partition, version: Int64, state: DocumentState)] = [:]
    /// With ``defersWrites``: the database's answer to each search run in this transaction.
    private var searches: [Search: [ObjectKey: (partition: Partition, object: SyncObject)]] = [:]

    /// When set, ``apply(_:in:validate:)`` and ``apply(_:)`` compute and stage their changes
    /// (as ``stage(_:in:validate:)``) and every staged change is written at once before the
    /// commit (or a savepoint): a trigger run that changes the same objects for many events
    /// writes each object once. Reads — ``load(_:)`` and the `find` searches — see the staged
    /// changes; a search is run against the database once per transaction and then answered
    /// with the transaction's own changes laid over it. SQL sent directly on ``connection``
    /// does not see staged changes: call ``writeStaged()`` first.
    public var defersWrites = false

    init(connection: PostgresConnection, store: ObjectStore, author: String, depth: Int) {
        self.connection = connection
        self.store = store
        self.author = author
        self.depth = depth
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
            known = known.filter { _, entry in entry.map { !names.contains($0.partition) } ?? false }
        }
        return versions.filter { partitions.contains($0.key) }
    }

    /// The stored state and partition of each key; keys never stored are left out. Includes
    /// this transaction's own writes, staged ones too; each key is read from the database once
    /// per transaction (again after its partition is locked).
    public func load(_ keys: [ObjectKey]) async throws -> [ObjectKey: (partition: String, state: DocumentState)] {
        var result: [ObjectKey: (partition: String, state: DocumentState)] = [:]
        var missing: [ObjectKey] = []
        for key in keys {
            if let entry = known[key] {
                if let entry { result[key] = entry }
            } else {
                missing.append(key)
            }
        }
        for (key, entry) in try await read(missing) {
            result[key] = entry
        }
        return result
    }

    private func read(_ keys: [ObjectKey]) async throws -> [ObjectKey: (partition: String, state: DocumentState)] {
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
        for key in keys { known[key] = result[key] }
        return result
    }

    /// Applies operations to several partitions with a constant number of statements, however
    /// many partitions and objects: one to lock them all (in sorted order), one to read every
    /// touched object, one to write every change. Returns the changes per partition.
    @discardableResult
    public func apply(_ operations: [Partition: [SyncOperation]]) async throws -> [Partition: [ObjectChange]] {
        let partitions = operations.keys.sorted()
        guard !partitions.isEmpty else { return [:] }
        for list in operations.values { try store.limits.check(operationCount: list.count) }
        let versions = try await lock(partitions)
        // Every touched object in one read; staging below reads them from the transaction.
        let stored = try await load(OperationApplier.keys(of: operations.values.flatMap { $0 }))
        if defersWrites {
            var result: [Partition: [ObjectChange]] = [:]
            for partition in partitions {
                result[partition] = try await stage(operations[partition]!, in: partition)
            }
            return result
        }
        var result: [Partition: [ObjectChange]] = [:]
        var writes: [(Partition, Int64, [ObjectChange])] = []
        for partition in partitions {
            var current: [ObjectKey: DocumentState] = [:]
            for key in OperationApplier.keys(of: operations[partition]!) {
                guard let entry = stored[key] else { continue }
                guard entry.partition == partition.description else {
                    throw SyncError(.partitionMismatch, "\(key) belongs to another partition than \(partition)")
                }
                current[key] = entry.state
            }
            let changes = try OperationApplier(partition: partition, limits: store.limits).apply(operations[partition]!, to: current)
            result[partition] = changes
            writes.append((partition, versions[partition]!, changes))
        }
        try await write(writes)
        return result
    }

    /// The live objects of a collection whose field at `path` (a dot-separated path of
    /// object fields) is one of `values` (compared as text), in every partition. Declare an
    /// ``ObjectIndex/field(collection:path:)`` for it, or it scans the collection.
    public func find(_ collection: String, where path: String, in values: [String]) async throws -> [(partition: Partition, object: SyncObject)] {
        try ObjectIndex.checkPath(path)
        // The path is spliced as a literal (it is checked above) so the expression matches a
        // declared index; the values are bound.
        var query = PostgresQuery(unsafeSQL: """
            SELECT collection, id, partition, version, body FROM psync_objects
            WHERE collection = $1 AND body IS NOT NULL AND body #>> \(ObjectIndex.literal(path)) = ANY($2)
            """)
        query.binds.append(collection, context: .default)
        query.binds.append(values, context: .default)
        return try await search(Search(collection: collection, predicate: BodyPredicate(path: path, condition: .field(Set(values)))), query)
    }

    /// The live objects of a collection whose array at `path` holds an element containing
    /// `element` (JSON containment), in every partition. Declare an
    /// ``ObjectIndex/arrayContains(collection:path:)`` for it, or it scans the collection.
    public func find(_ collection: String, whereArray path: String, contains element: JSONValue) async throws -> [(partition: Partition, object: SyncObject)] {
        try ObjectIndex.checkPath(path)
        var query = PostgresQuery(unsafeSQL: """
            SELECT collection, id, partition, version, body FROM psync_objects
            WHERE collection = $1 AND body IS NOT NULL AND (body #> \(ObjectIndex.literal(path))) @> $2
            """)
        query.binds.append(collection, context: .default)
        query.binds.append(JSONB(value: .array([element])), context: .default)
        return try await search(Search(collection: collection, predicate: BodyPredicate(path: path, condition: .arrayContains(element))), query)
    }

    /// A search of a collection's bodies.
    private struct Search: Hashable {
        let collection: String
        let predicate: BodyPredicate
    }

    /// Runs a search; with ``defersWrites``, once per transaction, with this transaction's own
    /// changes laid over the database's answer (ordered by key).
    private func search(_ search: Search, _ query: PostgresQuery) async throws -> [(partition: Partition, object: SyncObject)] {
        guard defersWrites else { return try await Self.objects(try await connection.query(query, logger: logger)) }
        var found: [ObjectKey: (partition: Partition, object: SyncObject)]
        if let answer = searches[search] {
            found = answer
        } else {
            found = [:]
            for entry in try await Self.objects(try await connection.query(query, logger: logger)) {
                found[entry.object.key] = entry
            }
            searches[search] = found
        }
        for (key, entry) in touched where key.collection == search.collection {
            if let body = entry.state.body, search.predicate.matches(body) {
                found[key] = (entry.partition, SyncObject(key: key, version: entry.version, body: body))
            } else {
                found[key] = nil
            }
        }
        return found.values.sorted { $0.object.key < $1.object.key }
    }

    private static func objects(_ rows: PostgresRowSequence) async throws -> [(partition: Partition, object: SyncObject)] {
        var result: [(partition: Partition, object: SyncObject)] = []
        for try await (collection, id, partition, version, body) in rows.decode((String, String, String, Int64, JSONB?).self) {
            let object = SyncObject(key: ObjectKey(uncheckedCollection: collection, id: id), version: version, body: body?.value.objectValue)
            result.append((try Partition(partition), object))
        }
        return result
    }

    /// Runs `body` inside a savepoint: when it throws, the database and this transaction's
    /// record of changes and events go back to where they were before it, the error is
    /// rethrown, and the transaction stays usable. Partitions must be locked before (a lock
    /// taken inside a savepoint that is rolled back would be released).
    public func withSavepoint<Result>(_ body: () async throws -> Result) async throws -> Result {
        try await writeStaged()
        let (changesBefore, eventsBefore, lockedBefore, knownBefore, touchedBefore) = (changes.count, events.count, versions, known, touched)
        try await connection.query("SAVEPOINT psync_upload", logger: logger)
        do {
            let result = try await body()
            try await connection.query("RELEASE SAVEPOINT psync_upload", logger: logger)
            return result
        } catch {
            try await connection.query("ROLLBACK TO SAVEPOINT psync_upload", logger: logger)
            changes.removeLast(changes.count - changesBefore)
            events.removeLast(events.count - eventsBefore)
            versions = lockedBefore
            known = knownBefore
            touched = touchedBefore
            staged = []
            // Answers read inside the savepoint may show its rolled-back writes.
            searches = [:]
            throw error
        }
    }

    /// Records an event about a user (registered, deleted) or a user's presence (opened,
    /// closed), delivered to triggers like object changes.
    public func recordUserEvent(_ kind: ChangeEvent.Kind, _ operation: ChangeEvent.Operation, userID: String, details: [String: JSONValue]? = nil) {
        var event = PendingEvent(kind: kind, operation: operation, userID: userID, after: details)
        event.depth = depth
        events.append(event)
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
        if defersWrites { return try await stage(operations, in: partition, validate: validate) }
        // Read after the lock, in a new statement: under READ COMMITTED it sees every commit
        // that preceded ours on this partition.
        let changes = try await compute(operations, in: partition, validate: validate)
        try await write([(partition, version, changes)])
        return changes
    }

    /// Like ``apply(_:in:validate:)`` for a partition already locked, but the changes are
    /// only computed, validated and remembered (later reads in this transaction see them):
    /// ``writeStaged()`` writes every staged change at once. A refusal (thrown) stages
    /// nothing and leaves the database untouched, so no savepoint is needed for it.
    /// `validate` must not write.
    @discardableResult
    public func stage(
        _ operations: [SyncOperation],
        in partition: Partition,
        validate: ((_ changes: [ObjectChange], _ transaction: WriteTransaction) async throws -> Void)? = nil
    ) async throws -> [ObjectChange] {
        guard let version = versions[partition] else {
            preconditionFailure("stage(_:in:) needs \(partition) locked first")
        }
        try store.limits.check(operationCount: operations.count)
        let changes = try await compute(operations, in: partition, validate: validate)
        for change in changes {
            known[change.key] = (partition.description, change.after)
            touched[change.key] = (partition, version, change.after)
            staged.append((partition, version, change, depth))
        }
        return changes
    }

    /// Writes every staged change in one statement.
    public func writeStaged() async throws {
        let pending = staged
        staged = []
        try await write(pending)
    }

    /// The changes of `operations` on the current state of their objects, validated.
    private func compute(
        _ operations: [SyncOperation], in partition: Partition,
        validate: ((_ changes: [ObjectChange], _ transaction: WriteTransaction) async throws -> Void)?
    ) async throws -> [ObjectChange] {
        let stored = try await load(OperationApplier.keys(of: operations))
        var current: [ObjectKey: DocumentState] = [:]
        for (key, entry) in stored {
            guard entry.partition == partition.description else {
                throw SyncError(.partitionMismatch, "\(key) belongs to another partition than \(partition)")
            }
            current[key] = entry.state
        }
        let changes = try OperationApplier(partition: partition, limits: store.limits).apply(operations, to: current)
        try await validate?(changes, self)
        return changes
    }

    /// Finishes the transaction's work before COMMIT: writes what is staged, then, in one
    /// statement, stamps the changed partitions with a Lamport clock and records the events.
    func finish() async throws {
        try await writeStaged()
        guard !events.isEmpty else { return }
        let changed = Set(changes.map(\.partition)).sorted()
        let none = Array("null".utf8)
        let rows = try await connection.query(
            """
            WITH stamped AS (
                UPDATE psync_partitions SET clock = (
                    SELECT coalesce(max(clock), 0) + 1 FROM psync_partitions WHERE partition = ANY(\(changed.map(\.description))::text[]))
                WHERE partition = ANY(\(changed.map(\.description))::text[])
                RETURNING clock
            ), inserted AS (
                INSERT INTO psync_events (clock, kind, operation, collection, object_id, partition, version, user_id, before, after, changed, removed, author, depth)
                SELECT coalesce((SELECT max(clock) FROM stamped), 0), e.kind, e.operation, NULLIF(e.collection, ''), NULLIF(e.object_id, ''),
                       NULLIF(e.partition, ''), NULLIF(e.version, -1), NULLIF(e.user_id, ''), NULLIF(e.before, 'null'::jsonb),
                       NULLIF(e.after, 'null'::jsonb), e.changed, e.removed, \(author), e.depth
                FROM unnest(\(events.map(\.kind.rawValue))::text[], \(events.map(\.operation.rawValue))::text[],
                            \(events.map { $0.key?.collection ?? "" })::text[], \(events.map { $0.key?.id ?? "" })::text[],
                            \(events.map { $0.partition?.description ?? "" })::text[], \(events.map { $0.version ?? -1 })::bigint[],
                            \(events.map { $0.userID ?? "" })::text[],
                            \(events.map { EncodedJSONB(bytes: $0.before.map { JSONValue.object($0).jsonBytes } ?? none) })::jsonb[],
                            \(events.map { EncodedJSONB(bytes: $0.after.map { JSONValue.object($0).jsonBytes } ?? none) })::jsonb[],
                            \(events.map { JSONB(value: .array($0.changed.map(JSONValue.string))) })::jsonb[],
                            \(events.map { JSONB(value: .array($0.removed.map(JSONValue.string))) })::jsonb[],
                            \(events.map(\.depth))::integer[])
                     WITH ORDINALITY AS e(kind, operation, collection, object_id, partition, version, user_id, before, after, changed, removed, depth, ord)
                ORDER BY e.ord
                RETURNING 1
            )
            SELECT count(*) FROM inserted
            """, logger: logger)
        for try await _ in rows {}
    }

    /// What to announce on ``ObjectStore/notificationChannel`` once the transaction has
    /// committed: the new version of every changed partition (`"<version>:<partition>"`), and
    /// `events` when there are events.
    var announcements: [String] {
        guard !events.isEmpty else { return [] }
        var payloads = Set(changes.map(\.partition)).sorted().map { "\(versions[$0]!):\($0)" }
        payloads.append("events")
        return payloads
    }

    /// Writes computed changes as they are (no operations applied): live bodies and tombstones,
    /// for all the given partitions in one statement.
    func write(_ batches: [(partition: Partition, version: Int64, changes: [ObjectChange])]) async throws {
        try await write(batches.flatMap { batch in batch.changes.map { (batch.partition, batch.version, $0, depth) } })
    }

    /// Writes changes, each with the trigger depth its event records.
    private func write(_ every: [(partition: Partition, version: Int64, change: ObjectChange, depth: Int)]) async throws {
        guard !every.isEmpty else { return }
        // One row per object: the last change of a key is its state (one statement cannot
        // update a row twice). Every change still gets its event.
        var last: [ObjectKey: Int] = [:]
        for (index, entry) in every.enumerated() { last[entry.2.key] = index }
        let all = every.indices.filter { last[every[$0].2.key] == $0 }.map { every[$0] }
        let rows = try await connection.query(
            """
            INSERT INTO psync_objects AS o (collection, id, partition, version, body)
            SELECT c, i, p, v, CASE WHEN d THEN NULL ELSE b END
            FROM unnest(\(all.map(\.2.key.collection))::text[], \(all.map(\.2.key.id))::text[], \(all.map(\.0.description))::text[],
                        \(all.map(\.1))::bigint[], \(all.map { EncodedJSONB(bytes: $0.2.encodedBody ?? Array("null".utf8)) })::jsonb[],
                        \(all.map { $0.2.encodedBody == nil })::boolean[]) AS t(c, i, p, v, b, d)
            ON CONFLICT (collection, id) DO UPDATE
              SET version = EXCLUDED.version, body = EXCLUDED.body, updated_at = now()
              WHERE o.partition = EXCLUDED.partition
            RETURNING 1
            """, logger: logger)
        var written = 0
        for try await _ in rows { written += 1 }
        guard written == all.count else {
            // Another transaction created one of these keys in another partition meanwhile.
            throw SyncError(.partitionMismatch, "an object of this upload was created in another partition meanwhile")
        }
        for (partition, version, change, depth) in every {
            known[change.key] = (partition.description, change.after)
            touched[change.key] = (partition, version, change.after)
            changes.append((partition, version, change))
            var event = PendingEvent(change: change, partition: partition, version: version)
            event.depth = depth
            events.append(event)
        }
    }
}
