import SyncProtocol

/// An open partition: its objects at any time, and a live sequence of its changes.
///
/// ```swift
/// let room = try await client.open(RChatPartitions.conversation("c-42"))
/// try await room.put(ChatMessage(conversationID: "c-42", author: "ann@example.com", text: "hi"))
/// for await snapshot in await room.updates() {
///     let messages = try snapshot.objects(ChatMessage.self)
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

    /// The objects of a model's collection, decoded.
    public func objects<T: SyncModel>(_ type: T.Type) async throws -> [T] {
        try T.decode(await objects())
    }

    /// The bodies of one collection decoded as `T`.
    public func objects<T: Decodable>(_ type: T.Type, collection: String) async throws -> [T] {
        try await objects().decoded(type, collection: collection)
    }

    /// One object of a model's collection by id, if it exists.
    public func object<T: SyncModel>(_ type: T.Type, id: String) async throws -> T? {
        let key = try ObjectKey(collection: T.collection, id: id)
        return try await objects().first { $0.key == key }?.body.map { try JSONValue.object($0).decode(T.self) }
    }

    /// The current state at once, then one snapshot after every change.
    public func updates() async -> AsyncStream<PartitionSnapshot> {
        await client.updates(of: partition)
    }

    /// Applies operations locally at once and queues them for the server; returns the
    /// upload's request id.
    @discardableResult
    public func write(_ operations: [SyncOperation]) async throws -> String {
        try await client.write(operations, in: partition)
    }

    /// Creates the models' objects, or sets each of their top-level fields, in one upload.
    @discardableResult
    public func put<T: SyncModel>(_ models: T...) async throws -> String {
        try await write(models.map { try $0.putOperation() })
    }
}

extension PartitionSnapshot {
    /// The objects of a model's collection, decoded.
    public func objects<T: SyncModel>(_ type: T.Type) throws -> [T] {
        try T.decode(objects)
    }

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
