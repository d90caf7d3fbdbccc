import SyncProtocol

/// An open transaction on objects: what a write validator reads and a trigger handler reads
/// and writes through. In the server it is the engine's transaction (what it applies commits
/// with the upload or with the trigger's progress); in an application's tests, the test
/// kit's `InMemoryObjects`, so a validator or a trigger handler is tested in-process in
/// milliseconds. Reads and searches see the transaction's own writes.
public protocol ObjectTransaction: ObjectReading {
    /// Applies operations to one partition, as a client upload would (without permission rules
    /// or validators). Returns the changes made.
    func apply(_ operations: [SyncOperation], in partition: Partition) async throws -> [ObjectChange]
    /// Applies operations to several partitions, as client uploads would (without permission
    /// rules or validators), in bounded memory however many partitions and objects: the
    /// changes are not handed back (a thousand members' records would all be held at once),
    /// only how many objects changed.
    func apply(_ operations: [Partition: [SyncOperation]]) async throws -> Int
    /// Applies operations to several partitions as ``apply(_:)`` does, committing the
    /// transaction in parts as it goes where the transaction may (a trigger's handling
    /// transaction: ``TriggerContext/applyInParts(_:)``); elsewhere as ``apply(_:)``.
    func applyInParts(_ operations: [Partition: [SyncOperation]]) async throws -> Int
    /// The live objects the search finds, ordered by key.
    func find(_ search: ObjectSearch) async throws -> [(partition: Partition, object: SyncObject)]
    /// Where the objects the search finds are, without their bodies: for a handler that only
    /// writes to them.
    func keys(_ search: ObjectSearch) async throws -> [(partition: Partition, key: ObjectKey)]
    /// ``keys(_:)`` of each search, in order: the engine asks the database once for the
    /// searches one index serves (the members of all the rooms a run of messages went to).
    func keys(_ searches: [ObjectSearch]) async throws -> [[(partition: Partition, key: ObjectKey)]]
    /// The number of open WebSocket sessions of a user on every instance.
    func openSessions(of userID: String) async throws -> Int
    /// The bodies of the live objects of `partition` among `keys`, read after the partition is
    /// locked for this transaction's writes: nobody else writes them before the commit, and a
    /// write to them after this reads nothing again.
    func bodiesForUpdate(of keys: [ObjectKey], in partition: Partition) async throws -> [ObjectKey: [String: JSONValue]]
}

extension ObjectTransaction {
    /// A transaction with nothing to lock (a test's stand-in) reads as ``ObjectReading/bodies(of:)``.
    public func bodiesForUpdate(of keys: [ObjectKey], in partition: Partition) async throws -> [ObjectKey: [String: JSONValue]] {
        try await bodies(of: keys)
    }

    /// A transaction that cannot commit in parts applies the operations in one.
    public func applyInParts(_ operations: [Partition: [SyncOperation]]) async throws -> Int {
        try await apply(operations)
    }

    public func keys(_ search: ObjectSearch) async throws -> [(partition: Partition, key: ObjectKey)] {
        try await find(search).map { ($0.partition, $0.object.key) }
    }

    public func keys(_ searches: [ObjectSearch]) async throws -> [[(partition: Partition, key: ObjectKey)]] {
        var found: [[(partition: Partition, key: ObjectKey)]] = []
        for search in searches { found.append(try await keys(search)) }
        return found
    }
}
