import Logging
import SyncProtocol

/// What a handler works with: the event's transaction, with system privileges (no permission
/// rules apply), and a logger. It reads (``ObjectReading``: raw bodies, ``SyncModel`` types,
/// accounts), searches by declared indexes (``ObjectIndex``) and applies operations; its
/// writes commit together with the trigger's progress.
///
/// The transaction defers its writes: what a handler applies is computed at once, seen by its
/// reads and searches, and written together with the rest of the run before the commit.
///
/// ```swift
/// let room = try await context.object(Room.self, id: roomID)
/// try await context.update(Room.self, id: roomID, in: partition) { room in room.members.append(email) }
/// ```
public struct TriggerContext: ObjectReading {
    /// The transaction the handler's writes commit in, together with the trigger's progress:
    /// the engine's, or in an application's tests the test kit's `InMemoryObjects`.
    package let transaction: any ObjectTransaction
    public let logger: Logger
    /// The trigger's name.
    public let trigger: String

    /// A context on `transaction`: in an application's tests, the test kit's `InMemoryObjects`,
    /// to run a trigger's handler on an event in-process.
    public init(transaction: any ObjectTransaction, logger: Logger = Logger(label: "psync.triggers"), trigger: String = "test") {
        self.transaction = transaction
        self.logger = logger
        self.trigger = trigger
    }

    // MARK: Reading

    /// The bodies of the live objects among `keys`, read in one round trip; reads see this
    /// transaction's own writes.
    public func bodies(of keys: [ObjectKey]) async throws -> [ObjectKey: [String: JSONValue]] {
        try await transaction.bodies(of: keys)
    }

    public func email(ofUser userID: String) async throws -> String? {
        try await transaction.email(ofUser: userID)
    }

    public func userID(ofEmail email: String) async throws -> String? {
        try await transaction.userID(ofEmail: email)
    }

    /// The number of open WebSocket sessions of a user on every instance, read under the
    /// user's presence lock: a session opening after this read commits its `session opened`
    /// event after this transaction, so a trigger that sets up what a presence trigger needs
    /// (a user record) cannot miss it.
    public func openSessions(of userID: String) async throws -> Int {
        try await transaction.openSessions(of: userID)
    }

    /// The bodies of the live objects of `partition` among `keys`, read after the partition is
    /// locked for this transaction's writes, as SQL's `SELECT … FOR UPDATE`: nobody else
    /// writes them before the commit, and what the handler then applies to them starts from
    /// this read instead of reading them again. For a handler that reads a record to decide
    /// what to write to it: a large record is read and parsed once, not twice. The lock gives
    /// the partition a new version even when nothing is written to it.
    public func bodiesForUpdate(of keys: [ObjectKey], in partition: Partition) async throws -> [ObjectKey: [String: JSONValue]] {
        try await transaction.bodiesForUpdate(of: keys, in: partition)
    }

    /// ``bodiesForUpdate(of:in:)`` of one object: its body, or `nil` when it is not a live
    /// object of `partition`.
    public func bodyForUpdate(of key: ObjectKey, in partition: Partition) async throws -> [String: JSONValue]? {
        try await bodiesForUpdate(of: [key], in: partition)[key]
    }

    // MARK: Writing

    /// Applies operations to one partition, as a client upload would (without the permission
    /// rules). Returns the changes made.
    @discardableResult
    public func apply(_ operations: [SyncOperation], in partition: Partition) async throws -> [ObjectChange] {
        try await transaction.apply(operations, in: partition)
    }

    /// Applies operations to several partitions, with a few statements per megabyte of
    /// objects however many partitions, in bounded memory: the objects are read, changed and
    /// written a chunk at a time, and the changes are not handed back. Returns how many
    /// objects changed.
    @discardableResult
    public func apply(_ operations: [Partition: [SyncOperation]]) async throws -> Int {
        try await transaction.apply(operations)
    }

    /// Applies operations to several partitions as ``apply(_:)-(Dictionary<Partition,[SyncOperation]>)``
    /// does, and commits the handler's transaction in parts as it goes: each time its
    /// operations have written the part's bytes of objects (`--trigger-part-bytes`, 8 MiB),
    /// everything the run's transaction did so far commits, without the trigger's progress,
    /// and the work goes on in a new transaction. For work too large for one transaction
    /// (a copy of a 5,000-member room's member list for each member): no transaction holds
    /// more than a part, each part renews the trigger's lease and gives the run its whole
    /// timeout again, and what is committed stays when the handler fails.
    ///
    /// The handler must be idempotent: after a failure, a timeout or a crash it is run again
    /// on the same event, with the parts it committed before, and must then leave the state
    /// it would have left the first time; for instance by reading first what is already done,
    /// as RChat's invitations skip the invitees whose record lists the room. Other triggers
    /// see each part's changes as they commit. Reads after a part see every commit since
    /// (the transaction's locks were let go). In an application's tests (`InMemoryObjects`)
    /// and outside a trigger's ordered handling, the operations apply in one transaction.
    @discardableResult
    public func applyInParts(_ operations: [Partition: [SyncOperation]]) async throws -> Int {
        try await transaction.applyInParts(operations)
    }

    // MARK: Searching (by declared indexes)

    /// Live objects of a collection whose field at `path` is one of `values`
    /// (index: ``ObjectIndex/field(collection:path:)``).
    public func find(_ collection: String, where path: String, in values: [String]) async throws -> [(partition: Partition, object: SyncObject)] {
        try await transaction.find(.field(collection, path: path, in: values))
    }

    /// Where the live objects of a collection whose field at `path` is each of `values` are, by
    /// value (every value given is a key; no object: an empty list), without their bodies
    /// (index: ``ObjectIndex/field(collection:path:)``): one statement for all the values. For
    /// a handler that needs to know who is who, not what their records hold: a room's members
    /// by name, whose records each list the whole room.
    public func keys(of collection: String, where path: String, in values: [String]) async throws -> [String: [(partition: Partition, key: ObjectKey)]] {
        let distinct = Array(Set(values))
        let found = try await transaction.keys(distinct.map { ObjectSearch.field(collection, path: path, in: [$0]) })
        return Dictionary(uniqueKeysWithValues: zip(distinct, found))
    }

    /// Live objects of a collection whose array at `path` has an element whose `field` is
    /// `value` (index: ``ObjectIndex/arrayElements(collection:path:field:)``).
    public func find(_ collection: String, whereArray path: String, field: String, is value: JSONValue) async throws -> [(partition: Partition, object: SyncObject)] {
        try await transaction.find(.array(collection, path: path, field: field, is: value))
    }

    /// Where the objects ``find(_:whereArray:field:is:)`` finds are, without their bodies: for a
    /// handler that only writes to them.
    public func keys(of collection: String, whereArray path: String, field: String, is value: JSONValue) async throws -> [(partition: Partition, key: ObjectKey)] {
        try await transaction.keys(.array(collection, path: path, field: field, is: value))
    }

    /// ``keys(of:whereArray:field:is:)`` for many values at once, by value (every value given
    /// is a key; no object: an empty list): the declared index is read once for all of them,
    /// where one search per value would cost a round trip each.
    public func keys(
        of collection: String, whereArray path: String, field: String, in values: [JSONValue]
    ) async throws -> [JSONValue: [(partition: Partition, key: ObjectKey)]] {
        let distinct = Array(Set(values))
        let found = try await transaction.keys(distinct.map { ObjectSearch.array(collection, path: path, field: field, is: $0) })
        return Dictionary(uniqueKeysWithValues: zip(distinct, found))
    }

    /// Live objects of a collection whose array at `path` holds an element containing `element`
    /// (index: ``ObjectIndex/arrayContains(collection:path:)``).
    public func find(_ collection: String, whereArray path: String, contains element: JSONValue) async throws -> [(partition: Partition, object: SyncObject)] {
        try await transaction.find(.array(collection, path: path, contains: element))
    }

    /// Where the objects ``find(_:whereArray:contains:)`` finds are, without their bodies: for
    /// a handler that only writes to them.
    public func keys(of collection: String, whereArray path: String, contains element: JSONValue) async throws -> [(partition: Partition, key: ObjectKey)] {
        try await transaction.keys(.array(collection, path: path, contains: element))
    }
}
