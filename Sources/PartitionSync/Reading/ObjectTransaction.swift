import SyncProtocol

/// An open transaction on objects: what a write validator reads and a trigger handler reads
/// and writes through. In the server it is the engine's transaction (what it applies commits
/// with the upload or with the trigger's progress); in an application's tests, the test
/// kit's `InMemoryObjects`, so a validator or a trigger handler is tested in-process in
/// milliseconds. Reads and searches see the transaction's own writes.
public protocol ObjectTransaction: ObjectReading {
    /// Applies operations to several partitions, as client uploads would (without permission
    /// rules or validators). Returns the changes made, per partition.
    func apply(_ operations: [Partition: [SyncOperation]]) async throws -> [Partition: [ObjectChange]]
    /// The live objects the search finds, ordered by key.
    func find(_ search: ObjectSearch) async throws -> [(partition: Partition, object: SyncObject)]
    /// Where the objects the search finds are, without their bodies: for a handler that only
    /// writes to them.
    func keys(_ search: ObjectSearch) async throws -> [(partition: Partition, key: ObjectKey)]
    /// The number of open WebSocket sessions of a user on every instance.
    func openSessions(of userID: String) async throws -> Int
}

extension ObjectTransaction {
    public func keys(_ search: ObjectSearch) async throws -> [(partition: Partition, key: ObjectKey)] {
        try await find(search).map { ($0.partition, $0.object.key) }
    }
}
