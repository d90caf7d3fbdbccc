import Logging
import PartitionSync
import PostgresNIO
import SyncProtocol

/// An open write transaction of the storage engine, handed to the closure of
/// ``ObjectStore/withWriteTransaction(author:_:)``.
///
/// Each partition written in the transaction is locked and its version bumped once, on the
/// first write; the lock is held until commit, so versions of a partition commit in order.
/// Partitions are locked in sorted order when several are written at once.
package final class WriteTransaction {
    /// The connection in its open transaction, for hooks that read with SQL.
    package let connection: PostgresConnection
    let store: ObjectStore
    /// The store's logger.
    package var logger: Logger { store.logger }
    /// What the transaction has locked, read, staged, written and queued: a value, which a
    /// savepoint copies and restores whole.
    var record: WriteRecord
    /// The size in bytes of the largest statement of writes sent so far (see
    /// ``ObjectStore/closeIfOutgrown(_:_:)``). A fact of the connection, not of the record: a
    /// savepoint rolled back does not shrink the buffer the statement grew.
    var largestStatement = 0
    /// Bytes of object bodies written so far (``apply(_:)`` sizes its chunks by them).
    var bodyBytesWritten = 0
    /// Whether ``applyInParts(_:)`` may commit this transaction before its end, and how: set
    /// by a trigger runner on its handling transactions. Unset, it applies in this transaction.
    package var partCommits: PartCommits?
    /// How many parts ``applyInParts(_:)`` committed so far.
    package private(set) var partsCommitted = 0
    /// Savepoints open now (``withSavepoint(_:)``): no part is committed inside one.
    private var openSavepoints = 0

    /// What a transaction that may commit in parts (``partCommits``) does at each part.
    package struct PartCommits: Sendable {
        /// Bytes of bodies a part writes before it is committed.
        package var bytes: Int
        /// Runs in the part's transaction before it commits, and throws to keep it from
        /// committing: the trigger's lease, checked and held until the commit.
        package var fence: @Sendable (WriteTransaction) async throws -> Void
        /// Runs after each part's commit (a failpoint of the tests).
        package var committed: @Sendable () async -> Void = {}

        package init(bytes: Int, fence: @escaping @Sendable (WriteTransaction) async throws -> Void) {
            self.bytes = bytes
            self.fence = fence
        }

        /// These part commits, renewing `renewal` after each (the run's deadline).
        package func renewing(_ renewal: DeadlineRenewal) -> PartCommits {
            var part = self
            part.committed = { [committed] in
                renewal.renew()
                await committed()
            }
            return part
        }
    }

    /// Who writes: recorded with the changes written from now on. A transaction applying
    /// several principals' uploads sets it before each.
    package var author: String {
        get { record.author }
        set { record.author = newValue }
    }
    /// The trigger depth of the changes written from now on: 0 for clients, one more than the
    /// handled event's for a trigger's writes. A trigger handling several events in one
    /// transaction sets it before each.
    package var depth: Int {
        get { record.depth }
        set { record.depth = newValue }
    }
    /// How changes are written: at once, or staged and written before the commit.
    package var mode: WriteMode {
        get { record.mode }
        set { record.mode = newValue }
    }
    /// The version each partition written so far carries in this transaction.
    package var versions: [Partition: Int64] { record.versions }
    /// Every object change written so far, in order.
    package var changes: [(partition: Partition, version: Int64, change: ObjectChange)] { record.changes }
    /// How many object changes this transaction has made so far, written or staged.
    package var changeCount: Int { record.changeCount }
    /// Bytes of JSON text of the objects read so far and kept (``WriteRecord/bytesRead``): with
    /// the changes staged from them, what the transaction holds in memory.
    package var bytesRead: Int { record.bytesRead }

    /// Whether ``mode`` defers writes (``WriteMode/deferred``). Setting it true defers them,
    /// keeping a deferred encoding; false writes at once.
    package var defersWrites: Bool {
        get { mode.defersWrites }
        set { mode = newValue ? (mode == .deferredEncoding ? .deferredEncoding : .deferred) : .immediate }
    }

    /// Whether ``mode`` is ``WriteMode/deferredEncoding``. Only a transaction that defers its
    /// writes defers encoding: set ``defersWrites`` (or ``mode``) first.
    package var defersEncoding: Bool {
        get { mode == .deferredEncoding }
        set {
            guard mode.defersWrites else { return }
            mode = newValue ? .deferredEncoding : .deferred
        }
    }

    /// How a write transaction begins. DEFERRABLE changes nothing for a READ COMMITTED, READ
    /// WRITE transaction; ``WriteStatements/LockAndRead`` checks it, so that run behind a
    /// BEGIN that failed it refuses instead of committing on its own (``pendingBegin``).
    static let begin: PostgresQuery = "BEGIN DEFERRABLE"

    /// A BEGIN sent and not yet waited for: the first statement, ``lockAndLoad(_:_:lockTimeout:)``,
    /// is queued behind it on the connection (``ObjectStore/withWriteTransaction(author:depth:beginsWithLock:ending:)``)
    /// and waits for it after its own answer.
    var pendingBegin: EventLoopFuture<PostgresQueryResult>?

    init(connection: PostgresConnection, store: ObjectStore, author: String, depth: Int) {
        self.connection = connection
        self.store = store
        self.record = WriteRecord(author: author, depth: depth)
    }

    /// Locks the partitions not yet locked in this transaction, in sorted order, and bumps
    /// their versions; returns the version of each.
    @discardableResult
    package func lock(_ partitions: [Partition]) async throws -> [Partition: Int64] {
        try await lockAndLoad(partitions, [])
        return versions.filter { partitions.contains($0.key) }
    }

    /// Locks the partitions not yet locked (as ``lock(_:)``) and then reads the keys (as
    /// ``load(_:)``), in one round trip: the read starts after the locks were granted, so it
    /// sees every commit that preceded ours on those partitions (migration 0006).
    ///
    /// With `lockTimeout`, a lock not granted within it fails the transaction (PostgreSQL's
    /// `lock_not_available`, 55P03), which then must be rolled back.
    @discardableResult
    package func lockAndLoad(
        _ partitions: [Partition], _ keys: [ObjectKey], lockTimeout: Duration? = nil
    ) async throws -> [ObjectKey: (partition: String, state: DocumentState)] {
        let missing = Set(partitions).subtracting(versions.keys).sorted()
        guard !missing.isEmpty else {
            precondition(pendingBegin == nil, "a transaction whose BEGIN is not answered begins by locking partitions")
            return try await load(keys)
        }
        // What this transaction knows of these partitions, and that a key is not stored,
        // may be older than the lock: those keys are read again.
        record.forgetReads(in: Set(missing.map(\.description)))
        let unknown = Array(Set(keys.filter { record.known[$0] == nil }))
        let requested = Dictionary(missing.map { ($0.description, $0) }, uniquingKeysWith: { first, _ in first })
        var found: [ObjectKey: (partition: String, state: DocumentState)] = [:]
        do {
            let rows = try await connection.execute(
                WriteStatements.LockAndRead(
                    partitions: missing.map(\.description), collections: unknown.map(\.collection), ids: unknown.map(\.id),
                    lockTimeoutMilliseconds: lockTimeout.map { Int32($0 / .milliseconds(1)) }),
                logger: logger)
            for try await (kind, partition, version, clock, collection, id, body, timeline) in rows {
                if kind == 0 {
                    let locked = try requested[partition] ?? Partition(partition)
                    record.versions[locked] = version
                    record.clocks[locked] = clock ?? 0
                    record.timeline = timeline ?? 0
                } else if let collection, let id {
                    let state: DocumentState = body?.value.objectValue.map(DocumentState.live) ?? .deleted
                    found[ObjectKey(uncheckedCollection: collection, id: id)] = (partition, state)
                    record.bytesRead += body?.textBytes ?? 0
                }
            }
        } catch {
            // A BEGIN that failed is the cause of what followed it.
            try await beginAnswered()
            throw error
        }
        try await beginAnswered()
        for key in unknown { record.known[key] = found[key] }
        return try await load(keys)
    }

    /// Waits for the answer to a BEGIN sent without waiting (``pendingBegin``), if any; throws
    /// its error.
    func beginAnswered() async throws {
        guard let begin = pendingBegin else { return }
        pendingBegin = nil
        _ = try await begin.get()
    }

    /// The stored state and partition of each key; keys never stored are left out. Includes
    /// this transaction's own writes, staged ones too; each key is read from the database once
    /// per transaction (again after its partition is locked).
    package func load(_ keys: [ObjectKey]) async throws -> [ObjectKey: (partition: String, state: DocumentState)] {
        var result: [ObjectKey: (partition: String, state: DocumentState)] = [:]
        var missing: [ObjectKey] = []
        for key in keys {
            if let entry = record.known[key] {
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

    /// Reads the keys of `keys` this transaction does not know yet (as ``load(_:)``, without
    /// gathering the states: a batch of an import, whose keys are all known, costs a lookup
    /// each, not a sort of its keys and a dictionary of their states).
    func readUnknown(_ keys: [ObjectKey]) async throws {
        var missing: [ObjectKey] = []
        var seen: Set<ObjectKey> = []
        for key in keys where record.known[key] == nil && seen.insert(key).inserted { missing.append(key) }
        guard !missing.isEmpty else { return }
        _ = try await read(missing)
    }

    private func read(_ keys: [ObjectKey]) async throws -> [ObjectKey: (partition: String, state: DocumentState)] {
        let (result, bytes) = try await Self.fetch(keys, on: connection, logger: logger)
        for key in keys { record.known[key] = result[key] }
        record.bytesRead += bytes
        return result
    }

    /// The stored state and partition of each key, read from the database (keys never stored
    /// are left out), and the bytes of their JSON text: what ``read(_:)`` reads, without
    /// touching the record, so that ``apply(_:)`` can read its next chunk while it works on
    /// this one.
    private static func fetch(
        _ keys: [ObjectKey], on connection: PostgresConnection, logger: Logger
    ) async throws -> (found: [ObjectKey: (partition: String, state: DocumentState)], bytes: Int) {
        guard !keys.isEmpty else { return ([:], 0) }
        let rows = try await connection.query(
            """
            SELECT o.collection, o.id, o.partition, \(unescaped: StoredBody.sql())
            FROM psync_objects o
            JOIN unnest(\(keys.map(\.collection))::text[], \(keys.map(\.id))::text[]) AS k(collection, id)
              ON o.collection = k.collection AND o.id = k.id
            \(unescaped: StoredBody.join())
            """, logger: logger)
        var result: [ObjectKey: (partition: String, state: DocumentState)] = [:]
        var bytes = 0
        for try await (collection, id, partition, body) in rows.decode((String, String, String, JSONB?).self) {
            let state: DocumentState = body?.value.objectValue.map(DocumentState.live) ?? .deleted
            result[ObjectKey(uncheckedCollection: collection, id: id)] = (partition, state)
            bytes += body?.textBytes ?? 0
        }
        return (result, bytes)
    }

    /// Applies operations to several partitions, in bounded memory however many partitions and
    /// objects, and returns how many objects changed. Every partition is locked first, in one
    /// statement (in sorted order). The objects are then read, changed and written in chunks
    /// of whole partitions, each chunk about four ``StorageConfiguration/statementBytes`` of
    /// bodies (one read and a few statements of writes a chunk; ``ApplyChunker``), the next
    /// chunk read while this one is changed and written, and the transaction lets go of each
    /// chunk once written: a trigger raising a counter in the records of a thousand members
    /// holds a few of them at a time, not all. What fits in one chunk is staged as any other
    /// change (written before the commit in a deferring ``mode``).
    ///
    /// Raises of declared counters (``ObjectCounter``) are written beside the bodies when the
    /// store says so (``ObjectStore/raisesCountersApart(_:)``), without reading or writing the
    /// bodies (``CounterRaises``); either way they make no events.
    @discardableResult
    package func apply(_ operations: [Partition: [SyncOperation]]) async throws -> Int {
        let (counters, apart) = store.counters
        guard !counters.isEmpty else { return try await applyWhole(operations) }
        let raises = CounterRaises(operations, counters: counters)
        guard !raises.isEmpty else { return try await applyWhole(operations) }
        for list in operations.values { try store.limits.check(operationCount: list.count) }
        // Every partition locked in one statement, in sorted order, as a whole apply does.
        try await lock(operations.keys.sorted())
        var decided: (entries: [CounterRaises.Entry], whole: [Int])
        if apart {
            decided = try await readCounters(raises)
        } else {
            decided = ([], Array(raises.objects.indices))
        }
        // The raises applied to the whole body, with the other operations; silent as the
        // raises written apart are.
        var whole = raises.rest
        for (partition, list) in raises.operations(of: decided.whole) { whole[partition, default: []] += list }
        let silenced = Set(decided.whole.map { raises.objects[$0].key })
        record.silenced.formUnion(silenced)
        defer { record.silenced.subtract(silenced) }
        let changed = try await applyWhole(whole)
        return changed + (try await writeCounters(decided.entries))
    }

    /// What the database says of the counters of `raises`, decided (``CounterRaises/decide(_:readings:limit:)``);
    /// the partitions are locked.
    private func readCounters(_ raises: CounterRaises) async throws -> (entries: [CounterRaises.Entry], whole: [Int]) {
        let keys = Set(raises.objects.map(\.key))
        // The database must hold this transaction's own changes of these objects.
        if record.staged.contains(where: { keys.contains($0.change.key) }) { try await writeStaged() }
        var readings: [[CounterRaises.Reading?]] = raises.objects.map { Array(repeating: nil, count: $0.counters.count) }
        var asked: [(object: Int, counter: Int)] = []
        var statement = WriteStatements.ReadCounters()
        func read() async throws {
            guard !asked.isEmpty else { return }
            for try await (n, partition, live, kept, isKept, place, value) in try await connection.execute(statement, logger: logger) {
                let (object, counter) = asked[Int(n) - 1]
                readings[object][counter] = CounterRaises.Reading(
                    partition: partition, live: live, kept: Int(kept), isKept: isKept, place: place, value: value?.value)
            }
            asked = []
            statement = WriteStatements.ReadCounters()
        }
        for (index, object) in raises.objects.enumerated() {
            for (position, counter) in object.counters.enumerated() {
                asked.append((index, position))
                statement.collections.append(object.key.collection)
                statement.ids.append(object.key.id)
                statement.paths.append(counter.path.description)
                statement.steps.append(JSONB(value: CounterRaises.steps(of: counter.path)))
            }
            if asked.count >= Self.countersPerStatement { try await read() }
        }
        try await read()
        return CounterRaises.decide(raises.objects, readings: readings, limit: store.configuration.countersPerObject)
    }

    /// Counters read or written by one statement.
    static let countersPerStatement = 5_000

    /// Writes raised counters beside the bodies, and takes them into the record; returns how
    /// many objects changed.
    private func writeCounters(_ entries: [CounterRaises.Entry]) async throws -> Int {
        guard !entries.isEmpty else { return 0 }
        for start in stride(from: 0, to: entries.count, by: Self.countersPerStatement) {
            var statement = WriteStatements.RaiseCounters()
            for entry in entries[start..<min(start + Self.countersPerStatement, entries.count)] {
                statement.collections.append(entry.key.collection)
                statement.ids.append(entry.key.id)
                statement.partitions.append(entry.partition.description)
                statement.versions.append(versions[entry.partition]!)
                statement.entries.append(JSONB(value: .object(entry.counters)))
            }
            var written = 0
            for try await count in try await connection.execute(statement, logger: logger) { written += Int(count) }
            // The objects were read live in their partitions after the locks.
            guard written == statement.ids.count else {
                throw SyncError(.internal, "raised counters of \(written) objects instead of \(statement.ids.count)")
            }
        }
        record.raisedApart(
            Set(entries.map(\.key)), in: Set(entries.map(\.partition)), screening: store.eventInterest, keeping: store.releasedChangeScreen)
        try await recordScreenedEvents()
        return entries.count
    }

    /// Applies operations to several partitions as ``apply(_:)`` does, a group of whole
    /// partitions at a time (``ApplyParts``), and, when the transaction may (``partCommits``,
    /// outside any savepoint), commits it each time its groups have written the part's bytes of
    /// bodies: everything the transaction did so far commits, its events recorded, and the
    /// work goes on in a new transaction on the same connection (its locks, reads and record
    /// start over). For work too large for one transaction whose doer is idempotent: after a
    /// failure it runs again from the start, with the earlier parts committed. Returns how many
    /// objects changed.
    @discardableResult
    package func applyInParts(_ operations: [Partition: [SyncOperation]]) async throws -> Int {
        guard let partCommits, openSavepoints == 0 else { return try await apply(operations) }
        let partitions = operations.keys.sorted()
        var parts = ApplyParts(budget: partCommits.bytes)
        var (start, changed) = (0, 0)
        while start < partitions.count {
            let group = partitions[start..<start + parts.nextGroup(remaining: partitions.count - start)]
            start = group.endIndex
            let before = bodyBytesWritten
            changed += try await apply(Dictionary(uniqueKeysWithValues: group.map { ($0, operations[$0]!) }))
            try await writeStaged()
            // The group's objects are written: the record lets go of them now, as a chunked
            // apply does, not when the part commits. A group small enough for one chunk was
            // kept whole until then: a part of a 5,000-member room's copies held its 22 records
            // before and after, parsed (the server's memory 60-120 MB higher than with the
            // copies in one transaction).
            record.release(Set(group.flatMap { OperationApplier.keys(of: operations[$0]!) }),
                           screening: store.eventInterest, keeping: store.releasedChangeScreen)
            try await recordScreenedEvents()
            if parts.wrote(partitions: group.count, bytes: bodyBytesWritten - before) {
                try await commitPart(partCommits)
            }
        }
        return changed
    }

    /// Commits what the transaction did so far (as its end would, after `part`'s fence), tells
    /// the store's observers, and begins a new transaction on the connection with a new
    /// record of the same author, depth and mode.
    private func commitPart(_ part: PartCommits) async throws {
        try await part.fence(self)
        if let conflict = try await finish() { throw conflict.error }
        try await connection.query("COMMIT", logger: logger)
        store.committed(self)
        partsCommitted += 1
        await part.committed()
        try await connection.query(Self.begin, logger: logger)
        let mode = record.mode
        record = WriteRecord(author: author, depth: depth)
        record.mode = mode
    }

    /// ``apply(_:)`` with every operation applied to the whole bodies.
    private func applyWhole(_ operations: [Partition: [SyncOperation]]) async throws -> Int {
        let partitions = operations.keys.sorted()
        guard !partitions.isEmpty else { return 0 }
        for list in operations.values { try store.limits.check(operationCount: list.count) }
        let keys = partitions.map { OperationApplier.keys(of: operations[$0]!) }
        var chunker = ApplyChunker(budget: 4 * store.configuration.statementBytes)
        var chunk = chunker.next(from: 0, objects: keys.map(\.count))
        if chunk.count == partitions.count || keys.reduce(0, { $0 + $1.count }) <= ApplyChunker.singleChunkObjects {
            // One chunk: every touched object in one read, after the locks.
            try await lockAndLoad(partitions, keys.flatMap { $0 })
            var changed = 0
            for partition in partitions { changed += try await stage(operations[partition]!, in: partition).count }
            if !mode.defersWrites { try await writeStaged() }
            return changed
        }
        try await lock(partitions)
        // In a savepoint, so a refusal in a later chunk leaves none of the earlier ones written
        // (staged changes of other objects are written when it starts, so each chunk's write
        // holds only its own).
        return try await withSavepoint {
            // The next chunk is read (and parsed, on another task) while this one is changed
            // and written: the connection runs the statements in the order they were sent.
            let (connection, logger) = (connection, logger)
            func reading(_ chunk: Range<Int>) -> Task<[ObjectKey: (partition: String, state: DocumentState)], any Error>? {
                guard !chunk.isEmpty else { return nil }
                let chunkKeys = Array(Set(keys[chunk].flatMap { $0 }))
                // Let go of once written: not counted in `bytesRead`.
                return Task { try await Self.fetch(chunkKeys, on: connection, logger: logger).found }
            }
            var pending = reading(chunk)
            do {
                var changed = 0
                while !chunk.isEmpty {
                    let chunkKeys = keys[chunk].flatMap { $0 }
                    let found = try await pending!.value
                    for key in chunkKeys { record.known[key] = found[key] }
                    let next = chunker.next(from: chunk.upperBound, objects: keys.map(\.count))
                    pending = reading(next)
                    for index in chunk { changed += try await stage(operations[partitions[index]]!, in: partitions[index]).count }
                    let before = bodyBytesWritten
                    try await writeStaged()
                    record.release(Set(chunkKeys), screening: store.eventInterest, keeping: store.releasedChangeScreen)
                    try await recordScreenedEvents()
                    chunker.wrote(objects: chunkKeys.count, bytes: bodyBytesWritten - before)
                    chunk = next
                }
                return changed
            } catch {
                // A read sent ahead finishes before the connection goes on (or back to the pool).
                _ = try? await pending?.value
                throw error
            }
        }
    }

    /// Runs `body` inside a savepoint: when it throws, the database and this transaction's
    /// record of changes and events go back to where they were before it, the error is
    /// rethrown, and the transaction stays usable. Partitions must be locked before (a lock
    /// taken inside a savepoint that is rolled back would be released).
    package func withSavepoint<Result>(_ body: () async throws -> Result) async throws -> Result {
        try await writeStaged()
        openSavepoints += 1
        defer { openSavepoints -= 1 }
        let savepoint = record.savepoint()
        try await connection.query("SAVEPOINT psync_upload", logger: logger)
        do {
            let result = try await body()
            try await connection.query("RELEASE SAVEPOINT psync_upload", logger: logger)
            return result
        } catch {
            try await connection.query("ROLLBACK TO SAVEPOINT psync_upload", logger: logger)
            record.rollBack(to: savepoint)
            throw error
        }
    }

    /// Records an event about a user (registered, deleted) or a user's presence (opened,
    /// closed), delivered to triggers like object changes.
    package func recordUserEvent(_ kind: ChangeEvent.Kind, _ operation: ChangeEvent.Operation, userID: String, details: [String: JSONValue]? = nil) {
        record.events.append(PendingEvent(kind: kind, operation: operation, userID: userID, after: details, author: author, depth: depth))
    }

    /// Applies operations of one partition against the current stored state and writes the
    /// objects they change. `validate` sees the computed changes before they are written
    /// and may throw to refuse them. Returns the changes written.
    @discardableResult
    package func apply(
        _ operations: [SyncOperation],
        in partition: Partition,
        validate: Check? = nil
    ) async throws -> [ObjectChange] {
        try store.limits.check(operationCount: operations.count)
        // Read after the lock: under READ COMMITTED it sees every commit that preceded ours on
        // this partition.
        try await lockAndLoad([partition], OperationApplier.keys(of: operations))
        let changes = try await stage(operations, in: partition, validate: validate)
        if !mode.defersWrites { try await writeStaged() }
        return changes
    }

    /// Like ``apply(_:in:validate:)`` for a partition already locked, but the changes are
    /// only computed, validated and remembered (later reads in this transaction see them):
    /// ``writeStaged()`` writes every staged change at once. A refusal (thrown) stages
    /// nothing and leaves the database untouched, so no savepoint is needed for it.
    /// `validate` must not write.
    @discardableResult
    package func stage(
        _ operations: [SyncOperation],
        in partition: Partition,
        validate: Check? = nil
    ) async throws -> [ObjectChange] {
        precondition(versions[partition] != nil, "stage(_:in:) needs \(partition) locked first")
        let upload = Upload(partition: partition, operations: operations, principal: author)
        switch try await stage([upload], validators: [validate])[0] {
        case .applied(_, _, let changes): return changes
        case .refused(let refusal): throw refusal
        case .repeated: preconditionFailure("an upload without a request id does not repeat")
        }
    }

    /// Writes every staged change in one statement.
    package func writeStaged() async throws {
        let pending = record.staged
        record.staged = []
        guard !pending.isEmpty else { return }
        if let conflict = try await persist(pending, finishing: false, staged: true) { throw conflict.error }
    }

    /// Finishes the transaction's work before COMMIT, in one statement: writes what is
    /// staged, stores the queued upload outcomes, stamps the changed partitions with a Lamport
    /// clock, and records the events the store's ``EventInterest`` wants. Returns the conflict
    /// the statement found, if any: the transaction must then be rolled back.
    func finish() async throws -> WriteConflict? {
        let pending = record.staged
        record.staged = []
        guard let conflict = try await persist(pending, finishing: true, staged: true) else {
            try await stampEarlyEvents()
            return nil
        }
        return conflict
    }

    /// The transaction's writes as its observers see them after the commit.
    var commit: Commit { record.commit }

    /// Writes computed changes as they are (no operations applied): live bodies and tombstones,
    /// for all the given partitions in one statement.
    func write(_ batches: [(partition: Partition, version: Int64, changes: [ObjectChange])]) async throws {
        try await write(batches.flatMap { batch in
            batch.changes.map { Write(partition: batch.partition, version: batch.version, change: $0, depth: depth, author: author) }
        })
    }

    /// Writes changes now; their events are recorded at commit.
    private func write(_ every: [Write]) async throws {
        guard !every.isEmpty else { return }
        if let conflict = try await persist(every, finishing: false, staged: false) { throw conflict.error }
    }

    /// Writes changes in one statement (`psync_write`, migration 0006). With `finishing`, the
    /// same statement also stores the queued outcomes, stamps the clock of every partition the
    /// transaction changed, and records the events the store's ``EventInterest`` wants.
    /// Returns what kept it from writing everything, if anything.
    private func persist(_ every: [Write], finishing: Bool, staged: Bool) async throws -> WriteConflict? {
        let (statement, rowCount) = try writeStatement(every, finishing: finishing, staged: staged)
        guard rowCount > 0 || !statement.requestIDs.isEmpty || !statement.stamp.isEmpty || !statement.kinds.isEmpty else {
            return nil
        }
        var counts = (written: 0, recorded: 0)
        bodyBytesWritten += statement.bodies.reduce(0) { $0 + $1.bytes.count }
        for (part, bytes) in statement.split(maximumBytes: store.configuration.statementBytes) {
            largestStatement = max(largestStatement, bytes)
            for try await (written, stored) in try await connection.execute(part, logger: logger) {
                counts.written += Int(written)
                counts.recorded += Int(stored)
            }
        }
        // Another transaction created one of these keys in another partition meanwhile.
        guard counts.written == rowCount else { return .createdElsewhere }
        // An earlier upload with one of these request ids committed (or is committing: the
        // insert waited for it).
        guard counts.recorded == statement.requestIDs.count else { return .outcomeExists }
        return nil
    }

    /// Takes `every` change into the transaction's record (its reads, changes and events) and
    /// makes the statement that writes them: one row per object (the last change of a key is
    /// its state: one statement cannot update a row twice), every change with its event. With
    /// `finishing`, also the queued outcomes, the clock stamp and those of all the
    /// transaction's events the store's ``EventInterest`` wants. Returns the statement and how
    /// many object rows it writes. `staged`: the changes come from ``WriteRecord/staged``, and
    /// the record knows them already (``WriteRecord/wrote(_:labelled:events:staged:)``).
    func writeStatement(_ every: [Write], finishing: Bool, staged: Bool = false) throws -> (statement: WriteStatements.Write, rows: Int) {
        var last: [ObjectKey: Int] = [:]
        for (index, entry) in every.enumerated() { last[entry.change.key] = index }
        var every = every
        for index in last.values where every[index].change.encodedBody == nil {
            // A body whose encoding was deferred (``WriteMode/deferredEncoding``) is checked and encoded now.
            if let body = every[index].change.after.body {
                every[index].change.encodedBody = try store.limits.encode(body: body, of: every[index].change.key)
            }
        }
        let rows = every.indices.filter { last[every[$0].change.key] == $0 }.map { every[$0] }
        let interest = store.eventInterest
        record.wrote(every, labelled: store.objectEventLabel, events: !interest.recordsNothing, staged: staged)
        let events = record.events
        let recorded = !finishing ? [] : record.screenedEvents + (interest.recordsAll ? events : events.filter { interest.wants($0.event) })
        let queued = finishing ? record.outcomes : []
        // The transaction's Lamport clock: the largest of its changed partitions', set on the
        // others (docs/TRIGGERS.md, "Ordering").
        let (stamp, clock) = finishing ? record.clockStamp : ([], nil)
        if finishing { record.recordedEvents = record.recordedEarly + recorded.count }
        let none = Array("null".utf8)
        var statement = WriteStatements.Write()
        for row in rows {
            statement.collections.append(row.change.key.collection)
            statement.ids.append(row.change.key.id)
            statement.partitions.append(row.partition.description)
            statement.versions.append(row.version)
            statement.bodies.append(EncodedJSONB(bytes: row.change.encodedBody ?? none))
            statement.deleted.append(row.change.after.body == nil)
            statement.marks.append(row.change.encodedBody.flatMap(BodyMarks.of)?.rawValue ?? -1)
        }
        for entry in queued {
            statement.principals.append(entry.upload.principal)
            statement.requestIDs.append(entry.requestId)
            statement.outcomePartitions.append(entry.upload.partition.description)
            statement.outcomes.append(JSONB(value: entry.outcome))
        }
        statement.stamp = stamp.map(\.description)
        statement.clock = clock
        Self.append(recorded, to: &statement)
        return (statement, rows.count)
    }

    /// Adds `events` to `statement`'s events, in order.
    private static func append(_ events: [PendingEvent], to statement: inout WriteStatements.Write) {
        let none = Array("null".utf8)
        for event in events {
            statement.kinds.append(event.kind.rawValue)
            statement.operations.append(event.operation.rawValue)
            statement.eventCollections.append(event.key?.collection ?? "")
            statement.objectIDs.append(event.key?.id ?? "")
            statement.eventPartitions.append(event.partition?.description ?? "")
            statement.eventVersions.append(event.version ?? -1)
            statement.userIDs.append(event.userID ?? "")
            let before = event.encodedBefore ?? event.before.map { JSONValue.object($0).jsonBytes }
            let after = event.encodedAfter ?? event.after.map { JSONValue.object($0).jsonBytes }
            statement.before.append(EncodedJSONB(bytes: before ?? none))
            statement.after.append(EncodedJSONB(bytes: after ?? none))
            statement.imageBytes.append(Int32(clamping: (before?.count ?? 0) + (after?.count ?? 0)))
            statement.changed.append(JSONB(value: .array(event.changed.map(JSONValue.string))))
            statement.removed.append(JSONB(value: .array(event.removed.map(JSONValue.string))))
            statement.depths.append(Int32(clamping: event.depth))
            statement.authors.append(event.author)
        }
    }

    /// Records the events screened so far (``WriteRecord/release(_:screening:keeping:)``) at
    /// once, rather than holding their JSON text until the finish: a trigger's copies of a
    /// room of 5,000 members, each ~0.4 MB, made 2 GB of events held in memory. They are
    /// recorded at clock 0 and take the transaction's clock at its finish
    /// (``stampEarlyEvents()``); a rollback (to a savepoint) takes them back with the changes.
    private func recordScreenedEvents() async throws {
        let events = record.screenedEvents
        guard !events.isEmpty else { return }
        var statement = WriteStatements.Write()
        Self.append(events, to: &statement)
        for (part, _) in statement.split(maximumBytes: store.configuration.statementBytes) {
            for try await _ in try await connection.execute(part, logger: logger) {}
        }
        record.screenedEvents = []
        record.recordedEarly += events.count
    }

    /// Gives the events recorded before the finish the transaction's clock, and the moment of
    /// its last statement (as the finish's own have): the sequencer orders events by clock,
    /// and a transaction's events stay together.
    private func stampEarlyEvents() async throws {
        guard record.recordedEarly > 0 else { return }
        try await connection.query(
            """
            UPDATE psync_events SET clock = \(record.clock ?? 0), created_at = clock_timestamp()
            WHERE xid = pg_current_xact_id() AND seq IS NULL AND clock <> \(record.clock ?? 0)
            """, logger: logger)
    }
}

/// A change to write, with the trigger depth and author its event records.
struct Write {
    var partition: Partition
    var version: Int64
    var change: ObjectChange
    var depth: Int
    var author: String
    /// Whether the change makes no event: a raise of counters (``ObjectCounter``) written into
    /// the body.
    var silent = false
}

/// What the statement that finishes a transaction found, which keeps it from committing as
/// computed: nothing of it may commit, and it is rolled back.
enum WriteConflict: Sendable, Hashable {
    /// An object of the transaction was created meanwhile in another partition.
    case createdElsewhere
    /// An upload outcome's request id has one stored already: an earlier upload with the same
    /// id committed (or was committing: the insert waited for it).
    case outcomeExists

    /// The error for a transaction that did not expect the conflict.
    var error: SyncError {
        switch self {
        case .createdElsewhere: SyncError(.partitionMismatch, "an object of this upload was created in another partition meanwhile")
        case .outcomeExists: SyncError(.internal, "an upload outcome was stored twice")
        }
    }
}
