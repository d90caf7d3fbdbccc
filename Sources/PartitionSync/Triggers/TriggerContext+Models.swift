import SyncProtocol

/// Typed access for handlers: read, search and write ``SyncModel`` values instead of editing
/// `[String: JSONValue]` by hand.
///
/// ```swift
/// try await context.put(Profile(_id: id, email: email, nick: nil), in: .profiles)
/// try await context.update(Room.self, id: roomID, in: partition) { room in
///     room.members.append(email)
/// }
/// ```
extension TriggerContext {
    /// Live objects of `type` whose field at `path` is one of `values`, decoded (index:
    /// ``ObjectIndex/field(collection:path:)``).
    public func find<Model: SyncModel>(_ type: Model.Type, where path: String, in values: [String]) async throws -> [(partition: Partition, model: Model)] {
        try await find(Model.collection, where: path, in: values).decoded(as: Model.self)
    }

    /// Live objects of `type` whose array at `path` has an element whose `field` is `value`,
    /// decoded (index: ``ObjectIndex/arrayElements(collection:path:field:)``).
    public func find<Model: SyncModel>(
        _ type: Model.Type, whereArray path: String, field: String, is value: JSONValue
    ) async throws -> [(partition: Partition, model: Model)] {
        try await find(Model.collection, whereArray: path, field: field, is: value).decoded(as: Model.self)
    }

    /// Live objects of `type` whose array at `path` holds an element containing `element`,
    /// decoded (index: ``ObjectIndex/arrayContains(collection:path:)``).
    public func find<Model: SyncModel>(
        _ type: Model.Type, whereArray path: String, contains element: JSONValue
    ) async throws -> [(partition: Partition, model: Model)] {
        try await find(Model.collection, whereArray: path, contains: element).decoded(as: Model.self)
    }

    /// Deletes the live objects of `type` whose field at `path` is one of `values` (found as by
    /// ``find(_:where:in:)``, without decoding them), a hundred to a write, partition by
    /// partition in order; returns how many. What a deleted parent takes with it: a wiki its
    /// pages, a room its chats.
    @discardableResult
    public func deleteAll<Model: SyncModel>(_ type: Model.Type, where path: String, in values: [String]) async throws -> Int {
        let found = try await find(Model.collection, where: path, in: values)
        let byPartition = Dictionary(grouping: found.map { ($0.partition, $0.object.key) }, by: \.0)
        for partition in byPartition.keys.sorted() {
            let keys = byPartition[partition]!.map(\.1)
            for start in stride(from: 0, to: keys.count, by: 100) {
                try await apply(keys[start..<min(start + 100, keys.count)].map { .delete($0) }, in: partition)
            }
        }
        return found.count
    }

    /// Creates the object of `model`, or sets each of its top-level fields (a `put`: fields
    /// the model leaves out, `nil` optionals among them, keep their stored values).
    @discardableResult
    public func put<Model: SyncModel>(_ model: Model, in partition: Partition) async throws -> [ObjectChange] {
        try await apply([model.putOperation()], in: partition)
    }

    /// Makes the stored object equal to `model`: creates it, or writes what differs field by
    /// field (`set`, and `unset` of the fields the model now leaves out, `nil` optionals among
    /// them); fields the model does not declare keep their stored values. Writes nothing when
    /// nothing differs.
    @discardableResult
    public func save<Model: SyncModel>(_ model: Model, in partition: Partition) async throws -> [ObjectChange] {
        let key = try model.objectKey
        guard let stored = try await body(of: key) else { return try await put(model, in: partition) }
        let operations = try model.operations(from: try JSONValue(encoding: Model.decode(stored, of: key)))
        guard !operations.isEmpty else { return [] }
        return try await apply(operations, in: partition)
    }

    /// Reads the object of `type` with id `id` in `partition`, lets `change` edit it, and
    /// writes what changed, field by field (`set` and `unset` of the changed paths, so other
    /// fields keep their stored values); returns the edited value, or `nil` (and changes
    /// nothing) when the object does not exist. A change of `_id` or `partition` is refused
    /// as a client's would be.
    @discardableResult
    public func update<Model: SyncModel>(
        _ type: Model.Type, id: String, in partition: Partition, _ change: (inout Model) throws -> Void
    ) async throws -> Model? {
        guard var model = try await object(Model.self, id: id) else { return nil }
        let before = try JSONValue(encoding: model)
        try change(&model)
        let operations = try model.operations(from: before)
        if !operations.isEmpty { try await apply(operations, in: partition) }
        return model
    }
}

extension SyncModel {
    /// The `set` and `unset` operations that turn the encoded body `before` into this
    /// value's: one per changed field (objects are compared field by field, arrays and other
    /// values whole, as ``JSONDiff`` does).
    public func operations(from before: JSONValue) throws -> [SyncOperation] {
        let key = try objectKey
        let after = try JSONValue(encoding: self)
        let (changed, removed) = JSONDiff.fields(from: before.objectValue, to: after.objectValue)
        var operations: [SyncOperation] = []
        for names in changed.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            let value = names.reduce(Optional(after)) { $0?[$1] } ?? .null
            operations.append(.set(key, path: try Path(names.map { .field($0) }), value: value))
        }
        for names in removed.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            operations.append(.unset(key, path: try Path(names.map { .field($0) })))
        }
        return operations
    }
}

extension Array where Element == (partition: Partition, object: SyncObject) {
    /// The live objects found, decoded.
    func decoded<Model: SyncModel>(as type: Model.Type) throws -> [(partition: Partition, model: Model)] {
        try compactMap { found in try found.object.body.map { (found.partition, try Model.decode($0, of: found.object.key)) } }
    }
}
