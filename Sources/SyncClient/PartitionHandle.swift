import SyncProtocol

/// An open partition: its objects at any time, and a live sequence of its changes.
///
/// ```swift
/// let room = try await client.open(try Partition("conversation=c-42"))
/// for await snapshot in await room.updates() {
///     let messages = try snapshot.objects(ChatMessage.self, in: "ChatMessage")
///     ...
/// }
/// ```
public struct PartitionHandle: Sendable {
    public let client: SyncClient
    public let partition: Partition

    /// The objects now (server state with pending writes on top).
    public func objects() async throws -> [SyncObject] {
        try await client.objects(in: partition)
    }

    /// The bodies of one collection decoded as `T`.
    public func objects<T: Decodable>(_ type: T.Type, collection: String) async throws -> [T] {
        try await objects().decoded(type, collection: collection)
    }

    /// The current state at once, then one snapshot after every change.
    public func updates() async -> AsyncStream<PartitionSnapshot> {
        await client.updates(of: partition)
    }

    /// Applies operations locally at once and queues them for the server.
    @discardableResult
    public func write(_ operations: [SyncOperation]) async throws -> String {
        try await client.write(operations, in: partition)
    }
}

extension PartitionSnapshot {
    /// The bodies of one collection decoded as `T`.
    public func objects<T: Decodable>(_ type: T.Type, collection: String) throws -> [T] {
        try objects.decoded(type, collection: collection)
    }
}

extension [SyncObject] {
    func decoded<T: Decodable>(_ type: T.Type, collection: String) throws -> [T] {
        try filter { $0.key.collection == collection }.compactMap { object in
            try object.body.map { try JSONValue.object($0).decode(T.self) }
        }
    }
}
