import PartitionSync
import SyncProtocol

/// How a write transaction writes the changes it applies.
package enum WriteMode: Sendable, Hashable {
    /// Each ``WriteTransaction/apply(_:in:validate:)`` and ``WriteTransaction/apply(_:)``
    /// writes its changes at once.
    case immediate
    /// Changes are computed and staged (as ``WriteTransaction/stage(_:in:validate:)``), and
    /// every staged change is written at once before the commit (or a savepoint): a trigger
    /// run that changes the same objects for many events writes each object once. Reads —
    /// ``WriteTransaction/load(_:)`` and the `find` searches — see the staged changes; a search
    /// is run against the database once per transaction and then answered with the
    /// transaction's own changes laid over it. SQL sent directly on the connection does not
    /// see staged changes: call ``WriteTransaction/writeStaged()`` first.
    case deferred
    /// As ``deferred``, and a new body is checked against the limits and encoded only when it
    /// is written, not each time an operation changes it (a run of trigger events changes an
    /// object many times, and only its last state is written). A body over the limits then
    /// fails the commit instead of the operation.
    case deferredEncoding

    /// Whether changes are staged and written before the commit.
    var defersWrites: Bool { self != .immediate }
}

/// The record of a write transaction: everything it has locked, read, staged, written and
/// queued, as a value. ``WriteTransaction`` is the thin wrapper that does the I/O; a savepoint
/// is a copy of the record, restored whole when the savepoint is rolled back.
struct WriteRecord {
    /// Who writes: recorded with the changes written from now on.
    var author: String
    /// The trigger depth of the changes written from now on.
    var depth: Int
    var mode = WriteMode.immediate
    /// The version each partition locked so far carries in this transaction.
    var versions: [Partition: Int64] = [:]
    /// The Lamport clock of each locked partition, as its lock raised it.
    var clocks: [Partition: Int64] = [:]
    /// The PostgreSQL timeline the locks were taken on (``PartitionHistory``): every version
    /// of this transaction is written on it.
    var timeline: Int32 = 0
    /// Every object change written so far, in order.
    var changes: [(partition: Partition, version: Int64, change: ObjectChange)] = []
    /// Events to record at commit, in order.
    var events: [PendingEvent] = []
    /// Objects read or written in this transaction (`nil`: not stored), so a key is read from
    /// the database once. Entries of a partition are dropped when it is locked, and entries of
    /// keys not stored then too: only a read after the lock sees every commit before ours.
    var known: [ObjectKey: (partition: String, state: DocumentState)?] = [:]
    /// Bytes of JSON text of the objects this transaction read into ``known`` (each read
    /// counts: one again after its partition's lock too), not those a chunked apply reads and
    /// lets go of: what a trigger's transaction of many events holds (``WriteTransaction/bytesRead``).
    var bytesRead = 0
    /// Changes staged and not written yet, with the trigger depth they were made at.
    var staged: [Write] = []
    /// Objects whose changes staged now make no event (raises of counters written into the
    /// bodies, ``WriteTransaction/apply(_:)``).
    var silenced: Set<ObjectKey> = []
    /// Every object this transaction changed, staged or written: where it is and what it is now.
    var touched: [ObjectKey: (partition: Partition, version: Int64, state: DocumentState)] = [:]
    /// The keys of ``touched`` in the order they were changed (with repeats), so a search's
    /// answer is brought up to date with only the changes made since it was last given.
    var touchLog: [ObjectKey] = []
    /// With a deferring ``mode``: the database's answer to each search run in this transaction.
    var searches: [WriteTransaction.Search: WriteTransaction.SearchAnswer] = [:]
    /// Upload outcomes to store at commit, with the rest of the transaction's writes.
    var outcomes: [(upload: Upload, requestId: String, outcome: JSONValue)] = []
    /// How many of ``events`` the finishing statement recorded (the others no one would read).
    var recordedEvents = 0
    /// Partitions (with their version) some of whose changes were written and then let go
    /// (``release(_:screening:)``): the commit names them without their changes.
    var released: [Partition: Int64] = [:]
    /// How many changes were let go.
    var releasedCount = 0
    /// The changes let go of that the store's screen kept for the commit (``ChangeScreen``).
    var kept: [Partition: [ObjectChange]] = [:]
    /// The screen's generation when this transaction first let go of changes.
    var screenedAt: Int?
    /// Events already screened by the store's ``EventInterest`` (when their changes were let
    /// go): the wanted ones, their bodies held as JSON text only, to record at commit before
    /// ``events``.
    var screenedEvents: [PendingEvent] = []
    /// How many screened events were recorded before the finish, as their changes were let go
    /// (``WriteTransaction/apply(_:)``), so the transaction holds none of their bodies until
    /// its commit: they take the transaction's clock at its finish.
    var recordedEarly = 0

    init(author: String, depth: Int) {
        self.author = author
        self.depth = depth
    }

    /// How many object changes this transaction has made so far, written or staged.
    var changeCount: Int { changes.count + staged.count + releasedCount }

    /// Every partition the transaction changed so far (written, not staged).
    var changedPartitions: Set<Partition> {
        Set(changes.map(\.partition)).union(released.keys)
    }

    /// The transaction's Lamport clock: the largest of its changed partitions' (docs/TRIGGERS.md,
    /// "Ordering"), every event it records carries it.
    var clock: Int64? {
        changedPartitions.compactMap { clocks[$0] }.max()
    }

    /// The changed partitions whose clock is behind the transaction's (``clock``), sorted: the
    /// finish stamps them with it.
    var clockStamp: (partitions: [Partition], clock: Int64?) {
        guard let clock else { return ([], nil) }
        return (changedPartitions.filter { clocks[$0, default: 0] < clock }.sorted(), clock)
    }

    /// Lets go of what the record holds of the written objects `keys` (but the changes `screen`
    /// keeps, for the commit's observers), so a transaction that
    /// writes many large objects holds only those of the chunk it is working on
    /// (``WriteTransaction/apply(_:)``): their changes (the commit names their partitions
    /// without them), what is known of them (a later read reads them again, and sees them as
    /// written, since the database has them), and every search answer (a search is run
    /// again). The events so far are screened by `interest` now: the unwanted ones are
    /// dropped, the wanted ones keep their bodies as JSON text. `keys` must have no staged
    /// change.
    mutating func release(_ keys: Set<ObjectKey>, screening interest: EventInterest, keeping screen: ChangeScreen?) {
        guard !keys.isEmpty else { return }
        for event in events where interest.recordsAll || interest.wants(event.event) {
            screenedEvents.append(event.encoded())
        }
        events = []
        if screenedAt == nil { screenedAt = screen?.generation() ?? 0 }
        changes.removeAll { entry in
            guard keys.contains(entry.change.key) else { return false }
            released[entry.partition] = entry.version
            releasedCount += 1
            if let screen, screen.keeps(entry.partition, entry.change) { kept[entry.partition, default: []].append(entry.change) }
            return true
        }
        for key in keys {
            known[key] = nil
            touched[key] = nil
        }
        touchLog.removeAll { keys.contains($0) }
        searches = [:]
    }

    /// Takes raises of counters written beside the bodies (``WriteTransaction/apply(_:)``) into
    /// the record: nothing of the objects' new states is known here (a later read reads them
    /// again, with the counters laid in), so they are let go of as ``release(_:screening:keeping:)``
    /// lets go of written changes, and their partitions' commits name no changes (observers
    /// read them). No permission decision depends on a counter: the screen keeps none of them.
    mutating func raisedApart(_ keys: Set<ObjectKey>, in partitions: Set<Partition>, screening interest: EventInterest, keeping screen: ChangeScreen?) {
        guard !keys.isEmpty else { return }
        release(keys, screening: interest, keeping: screen)
        for partition in partitions { released[partition] = versions[partition]! }
        releasedCount += keys.count
    }

    /// Forgets what is known of the objects of `partitions`, and that keys are not stored:
    /// what was read before their locks may be older than the lock.
    mutating func forgetReads(in partitions: Set<String>) {
        known = known.filter { _, entry in entry.map { !partitions.contains($0.partition) } ?? false }
    }

    /// The changes `operations` make to the objects of `partition` as this record knows them
    /// (an object missing from ``known`` is taken as not stored): the record's view, its own
    /// staged changes included.
    func changes(of operations: [SyncOperation], in partition: Partition, limits: Limits) throws(SyncError) -> [ObjectChange] {
        var current: [ObjectKey: DocumentState] = [:]
        for key in OperationApplier.keys(of: operations) {
            guard let entry = known[key] ?? nil else { continue }
            guard entry.partition == partition.description else {
                try Self.checkForeign(key, operations, partition)
                continue
            }
            current[key] = entry.state
        }
        return try OperationApplier(partition: partition, limits: limits).apply(operations, to: current, encoding: mode != .deferredEncoding)
    }

    /// To the operations of one partition, an object of another partition is absent: `set`,
    /// `increment` and the other edits answer `not_found` and `delete` does nothing, exactly
    /// as for an id nobody used, so an upload cannot tell whether an id exists in a partition
    /// its author may not read. Only a `put` cannot pretend, since ids are unique across
    /// partitions: `partition_mismatch`.
    static func checkForeign(_ key: ObjectKey, _ operations: [SyncOperation], _ partition: Partition) throws(SyncError) {
        if operations.contains(where: { if case .put(key, _) = $0 { return true } else { return false } }) {
            throw SyncError(.partitionMismatch, "\(key) is the id of an object of another partition than \(partition)")
        }
    }

    /// Stages the changes of one partition, made by the current author at the current depth.
    mutating func stage(_ changes: [ObjectChange], in partition: Partition) {
        let version = versions[partition]!
        for change in changes {
            known[change.key] = (partition.description, change.after)
            touched[change.key] = (partition, version, change.after)
            touchLog.append(change.key)
            staged.append(Write(partition: partition, version: version, change: change, depth: depth, author: author, silent: silenced.contains(change.key)))
        }
    }

    /// Takes written changes into the record: what is known and touched, the changes, and
    /// an event for each (with `events`). Changes `staged` by ``stage(_:in:)`` are known and
    /// touched already, as they are now: only their changes and events are taken (an import
    /// batch's 500 objects were hashed into both dictionaries a second time).
    mutating func wrote(_ every: [Write], labelled label: ChangeEvent.Operation?, events makesEvents: Bool = true, staged: Bool = false) {
        changes.reserveCapacity(changes.count + every.count)
        for write in every {
            let (partition, version, change) = (write.partition, write.version, write.change)
            if !staged {
                known[change.key] = (partition.description, change.after)
                touched[change.key] = (partition, version, change.after)
                touchLog.append(change.key)
            }
            changes.append((partition, version, change))
            if makesEvents && !write.silent {
                events.append(PendingEvent(change: change, partition: partition, version: version, author: write.author, depth: write.depth, labelled: label))
            }
        }
    }

    /// A savepoint: the whole record as it is.
    struct Savepoint {
        fileprivate let record: WriteRecord
    }

    /// The record as it is now, to go back to.
    func savepoint() -> Savepoint {
        Savepoint(record: self)
    }

    /// Goes back to the record as it was at `savepoint`, every field of it.
    mutating func rollBack(to savepoint: Savepoint) {
        self = savepoint.record
    }

    /// The transaction's writes as its observers see them after the commit.
    /// A partition some of whose changes were let go has none (its observers read it).
    var commit: Commit {
        var byPartition: [Partition: [ObjectKey: ObjectChange]] = [:]
        for (partition, _, change) in changes { byPartition[partition, default: [:]][change.key] = change }
        return Commit(
            partitions: changedPartitions.sorted().map { partition in
                let changes = byPartition[partition].map { $0.values.sorted { $0.key < $1.key } }
                guard released[partition] != nil else {
                    return Commit.PartitionChanges(partition: partition, version: versions[partition]!, changes: changes ?? [])
                }
                return Commit.PartitionChanges(
                    partition: partition, version: versions[partition]!, changes: nil, kept: (kept[partition] ?? []) + (changes ?? []))
            },
            recordedEvents: recordedEvents, screenedAt: screenedAt, timeline: timeline)
    }
}
