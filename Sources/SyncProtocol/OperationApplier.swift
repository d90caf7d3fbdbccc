/// Applies a list of operations of one partition to the current states of the objects they
/// touch: pure logic shared by the server (inside the upload transaction) and the client SDK
/// (for optimistic local writes), so both compute the same result.
///
/// Rules beyond the single operations (docs/PROTOCOL.md, "Operations"):
/// - `put` on a deleted object creates it again; on an absent one creates it.
/// - Every other operation on an absent object is `not_found`; on a deleted object it is
///   dropped (delete wins over concurrent edits).
/// - After a `delete` in the same list, later operations on that object are dropped.
/// - `_id` and `partition` are set by the engine and cannot be changed.
public struct OperationApplier: Sendable {
    public let partition: Partition
    public let limits: Limits

    public init(partition: Partition, limits: Limits = Limits()) {
        self.partition = partition
        self.limits = limits
    }

    /// The distinct keys the operations touch, sorted.
    public static func keys(of operations: [SyncOperation]) -> [ObjectKey] {
        // Most uploads hold one operation: no set to hash it into, nothing to sort.
        if operations.count == 1 { return [operations[0].key] }
        return Array(Set(operations.map(\.key))).sorted()
    }

    /// Applies `operations` in order. `current` holds the stored state of each touched key
    /// (a key not in it counts as ``DocumentState/absent``). Returns the objects whose state
    /// changed, sorted by key; objects an operation left as they were are not included.
    ///
    /// Each new body is checked against the limits and encoded (``ObjectChange/encodedBody``)
    /// unless `encoding` is false: then the caller must do it (``Limits/encode(body:of:)``)
    /// before the body is stored, as a writer that changes an object many times before it
    /// writes it once does.
    public func apply(
        _ operations: [SyncOperation], to current: [ObjectKey: DocumentState], encoding: Bool = true
    ) throws(SyncError) -> [ObjectChange] {
        try limits.check(operationCount: operations.count)
        if operations.count == 1 { return try applyOne(operations[0], to: current, encoding: encoding) }
        var working: [ObjectKey: DocumentState] = [:]
        var deletedHere: Set<ObjectKey> = []
        var replaced: Set<ObjectKey> = []
        for operation in operations {
            let key = operation.key
            if deletedHere.contains(key) { continue }
            let state = working[key] ?? current[key] ?? .absent
            if let next = try apply(operation, to: state) {
                working[key] = next
                switch (operation, state) {
                case (.delete, _): deletedHere.insert(key)
                case (.put, .live): replaced.insert(key)
                default: break
                }
            }
        }
        var changes: [ObjectChange] = []
        for (key, after) in working {
            let before = current[key] ?? .absent
            if before == after { continue }
            if case .deleted = after, case .absent = before { continue }
            let encoded = encoding ? try after.body.map { body throws(SyncError) in try limits.encode(body: body, of: key) } : nil
            changes.append(ObjectChange(key: key, before: before, after: after, encodedBody: encoded, replaced: replaced.contains(key)))
        }
        return changes.sorted { $0.key < $1.key }
    }

    /// ``apply(_:to:encoding:)`` of a list of one operation (most uploads, and every document of
    /// an import): the same change, without the working dictionaries and sets of a list.
    private func applyOne(
        _ operation: SyncOperation, to current: [ObjectKey: DocumentState], encoding: Bool
    ) throws(SyncError) -> [ObjectChange] {
        let key = operation.key
        let before = current[key] ?? .absent
        guard let after = try apply(operation, to: before), before != after else { return [] }
        if case .deleted = after, case .absent = before { return [] }
        let encoded = encoding ? try after.body.map { body throws(SyncError) in try limits.encode(body: body, of: key) } : nil
        let replaced: Bool
        switch (operation, before) {
        case (.put, .live): replaced = true
        default: replaced = false
        }
        return [ObjectChange(key: key, before: before, after: after, encodedBody: encoded, replaced: replaced)]
    }

    /// The change of a `put` that creates `key` (absent before) with `body`: what
    /// ``apply(_:to:encoding:)`` makes of it, checked against the limits and encoded, without
    /// the list of operations and the table of states around it (the storage engine's bulk
    /// path of an import, which creates objects only).
    public func create(_ key: ObjectKey, body: [String: JSONValue]) throws(SyncError) -> ObjectChange {
        // A put always leaves a live object.
        guard let after = try apply(.put(key, body: body), to: .absent), let created = after.body else {
            preconditionFailure("a put leaves a live object")
        }
        return ObjectChange(key: key, before: .absent, after: after, encodedBody: try limits.encode(body: created, of: key))
    }

    /// The state after one operation, or `nil` when the operation is dropped.
    private func apply(_ operation: SyncOperation, to state: DocumentState) throws(SyncError) -> DocumentState? {
        let key = operation.key
        switch operation {
        case .put(_, let body):
            try checkIdentity(of: body, key: key)
            // A new object's body is taken as it is (not rebuilt field by field), and its
            // identity fields set only where missing (checked equal where present).
            var merged: [String: JSONValue]
            if let stored = state.body {
                merged = stored
                for (field, value) in body { merged[field] = value }
            } else {
                merged = body
            }
            if body["_id"] == nil || state.body != nil { merged["_id"] = .string(key.id) }
            if body["partition"] == nil || state.body != nil { merged["partition"] = .string(partition.description) }
            return .live(merged)
        case .delete:
            switch state {
            case .live: return .deleted
            case .deleted, .absent: return nil
            }
        case .set, .unset, .increment, .arrayAppend, .arrayRemove:
            let body: [String: JSONValue]
            switch state {
            case .absent: throw SyncError(.notFound, "\(key) does not exist; create it with 'put' first")
            case .deleted: return nil
            case .live(let live): body = live
            }
            guard let path = operation.path else { return nil }
            let field = path.topLevelField
            guard field != "_id", field != "partition" else {
                throw SyncError(.immutableField, "\(key): '\(field)' is set by the server and cannot be changed")
            }
            var root = JSONValue.object(body)
            try PathEditor(key: key, path: path).edit(&root, with: edit(for: operation))
            return .live(root.objectValue ?? body)
        }
    }

    private func checkIdentity(of body: [String: JSONValue], key: ObjectKey) throws(SyncError) {
        if let id = body["_id"], id != .string(key.id) {
            throw SyncError(.invalidOperation, "\(key): the body's _id \(id) differs from the object id")
        }
        if let named = body["partition"], named != .string(partition.description) {
            throw SyncError(
                .partitionMismatch, "\(key): the body names partition \(named), the upload is for \(partition)")
        }
    }

    private func edit(for operation: SyncOperation) -> PathEditor.Edit {
        switch operation {
        case .set(_, _, let value): return .set(value)
        case .unset: return .unset
        case .increment(_, _, let by): return .increment(by)
        case .arrayAppend(_, _, let value): return .append(value)
        case .arrayRemove(_, _, let match): return .remove(match)
        case .put, .delete: preconditionFailure("put and delete have no path")
        }
    }
}
