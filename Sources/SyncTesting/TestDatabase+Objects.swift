import PartitionSync
import PostgresNIO
import SyncStorage

/// What an application's tests read and write in their database directly, beside what their
/// clients do over the server: objects as the server stores them, raw or decoded, and writes
/// that go through the storage engine as a trigger's would (no permission rules, no
/// validators), firing the triggers that run on the database.
///
/// ```swift
/// try await TestDatabase.with { db in
///     try await db.apply([.put(roomKey, body: ["title": "Team"])], in: try Partition("room=r1"))
///     #expect(try await db.object(Room.self, id: "r1")?.title == "Team")
/// }
/// ```
extension TestDatabase {
    /// The body of the live object under `key`, or `nil` when it is absent or deleted.
    public func body(of key: ObjectKey) async throws -> [String: JSONValue]? {
        try await store().body(of: key)
    }

    /// The live object of `type` with id `id`, decoded, or `nil`.
    public func object<Model: SyncModel>(_ type: Model.Type, id: String) async throws -> Model? {
        try await body(of: try ObjectKey(collection: Model.collection, id: id)).map { try JSONValue.object($0).decode(Model.self) }
    }

    /// The live objects of a partition, by key.
    public func objects(in partition: Partition) async throws -> [ObjectKey: SyncObject] {
        try await store().snapshot(of: partition)
    }

    /// The live objects of `type` in a partition, decoded, by id.
    public func objects<Model: SyncModel>(_ type: Model.Type, in partition: Partition) async throws -> [String: Model] {
        var models: [String: Model] = [:]
        for object in try await objects(in: partition).values where object.key.collection == Model.collection {
            if let body = object.body { models[object.key.id] = try JSONValue.object(body).decode(Model.self) }
        }
        return models
    }

    /// Applies operations to a partition in one transaction, as `principal` but without the
    /// permission rules and validators (as a trigger writes); the changes it made.
    @discardableResult
    public func apply(_ operations: [SyncOperation], in partition: Partition, as principal: Principal = .system("test")) async throws -> [ObjectChange] {
        try await store().withWriteTransaction(author: principal.description) { transaction in
            try await transaction.apply(operations, in: partition)
        }
    }

    /// The events triggers gave up on, as (trigger, event position, error).
    public func deadLetters() async throws -> [(trigger: String, position: Int64, error: String)] {
        try await TriggerLedger(store: store()).deadLetters().map { ($0.trigger, $0.position, $0.error) }
    }

    /// Whether every recorded event is numbered and every registered trigger is past all of
    /// them: the triggers have nothing left to do (until the next write). What a test waits for
    /// before it checks that nothing more happens, instead of sleeping.
    public func triggersCaughtUp() async throws -> Bool {
        let rows = try await client.query(
            """
            SELECT NOT EXISTS (SELECT 1 FROM psync_events WHERE seq IS NULL)
               AND NOT EXISTS (SELECT 1 FROM psync_triggers t WHERE t.position < (SELECT coalesce(max(seq), 0) FROM psync_events))
            """, logger: logger)
        for try await caughtUp in rows.decode(Bool.self) { return caughtUp }
        return false
    }
}
