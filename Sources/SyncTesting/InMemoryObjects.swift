import Foundation
import Locking
import PartitionSync
import SyncProtocol

/// Objects and accounts in memory, for testing an application's permission rules, write
/// validators and trigger handlers in-process: a ``PermissionContext`` or a
/// ``ValidationContext`` made on it reads them as the server's would read the database, and a
/// ``TriggerContext`` made on it also searches and writes them as a trigger's transaction
/// would, in milliseconds and without PostgreSQL.
///
/// ```swift
/// let objects = InMemoryObjects()
/// try objects.put(room, in: Partition("room=r1"))
/// objects.addAccount(userID: "u1", email: "ann@example.com")
/// let allowed = try await RoomRule().canRead(.user("u1"), Partition("room=r1"), context: PermissionContext(source: objects))
/// ```
public final class InMemoryObjects: ObjectSource, Sendable {
    private struct Stored {
        var partition: Partition
        var object: SyncObject
    }

    private struct State {
        var objects: [ObjectKey: Stored] = [:]
        var emails: [String: String] = [:]
        /// Versions per partition, as the server numbers commits.
        var versions: [Partition: Int64] = [:]
        var openSessions: [String: Int] = [:]
    }

    private let state = Locked(State())

    public init() {}

    /// Stores (or replaces) the object under `key` in `partition`, at the partition's next
    /// version, with `_id` and `partition` set as the server sets them.
    public func put(_ body: [String: JSONValue], key: ObjectKey, in partition: Partition) {
        var body = body
        body["_id"] = .string(key.id)
        body["partition"] = .string(partition.description)
        state.withLock { state in
            let version = (state.versions[partition] ?? 0) + 1
            state.versions[partition] = version
            state.objects[key] = Stored(partition: partition, object: SyncObject(key: key, version: version, body: body))
        }
    }

    /// Stores a model as its `put` would (without `_id` and `partition`).
    public func put<Model: SyncModel>(_ model: Model, in partition: Partition) throws {
        guard case .put(let key, let body) = try model.putOperation() else { return }
        put(body, key: key, in: partition)
    }

    /// Deletes the object under `key`, if any.
    public func delete(_ key: ObjectKey) {
        state.withLock { _ = $0.objects.removeValue(forKey: key) }
    }

    /// Adds a user account (its email counts as verified).
    public func addAccount(userID: String, email: String) {
        state.withLock { $0.emails[userID] = email }
    }

    /// Sets the number of open sessions ``TriggerContext/openSessions(of:)`` reads for a user.
    public func setOpenSessions(_ count: Int, of userID: String) {
        state.withLock { $0.openSessions[userID] = count }
    }

    /// Every live object, ordered by key.
    public var all: [(partition: Partition, object: SyncObject)] {
        state.withLock { state in
            state.objects.values.filter { $0.object.body != nil }.sorted { $0.object.key < $1.object.key }.map { ($0.partition, $0.object) }
        }
    }

    public func liveObjects(_ keys: [ObjectKey]) async throws -> [(partition: Partition, object: SyncObject)] {
        state.withLock { state in
            keys.compactMap { key in
                state.objects[key].flatMap { $0.object.body == nil ? nil : ($0.partition, $0.object) }
            }
        }
    }

    public func email(ofUser userID: String) async throws -> String? {
        state.withLock { $0.emails[userID] }
    }

    public func userID(ofEmail email: String) async throws -> String? {
        let wanted = email.lowercased()
        return state.withLock { state in state.emails.first { $0.value.lowercased() == wanted }?.key }
    }
}

extension InMemoryObjects: ObjectTransaction {
    public func bodies(of keys: [ObjectKey]) async throws -> [ObjectKey: [String: JSONValue]] {
        var bodies: [ObjectKey: [String: JSONValue]] = [:]
        for (_, object) in try await liveObjects(keys) { bodies[object.key] = object.body }
        return bodies
    }

    /// Applies the operations as the server's transaction would: all of them or, when one is
    /// refused (an object of another partition, an operation on an absent object, a limit),
    /// none. Each partition with changes gets its next version.
    @discardableResult
    public func apply(_ operations: [SyncOperation], in partition: Partition) async throws -> [ObjectChange] {
        try changes(of: [partition: operations])[partition] ?? []
    }

    /// As ``apply(_:in:)`` for several partitions; returns how many objects changed.
    @discardableResult
    public func apply(_ operations: [Partition: [SyncOperation]]) async throws -> Int {
        try changes(of: operations).values.reduce(0) { $0 + $1.count }
    }

    private func changes(of operations: [Partition: [SyncOperation]]) throws(SyncError) -> [Partition: [ObjectChange]] {
        try state.withLock { (state: inout State) throws(SyncError) -> [Partition: [ObjectChange]] in
            var next = state
            var result: [Partition: [ObjectChange]] = [:]
            for partition in operations.keys.sorted() {
                let list = operations[partition]!
                var current: [ObjectKey: DocumentState] = [:]
                for key in OperationApplier.keys(of: list) {
                    guard let stored = next.objects[key] else { continue }
                    guard stored.partition == partition else {
                        throw SyncError(.partitionMismatch, "\(key) is the id of an object of another partition than \(partition)")
                    }
                    current[key] = stored.object.body.map(DocumentState.live) ?? .deleted
                }
                let changes = try OperationApplier(partition: partition).apply(list, to: current)
                if !changes.isEmpty {
                    let version = (next.versions[partition] ?? 0) + 1
                    next.versions[partition] = version
                    for change in changes {
                        next.objects[change.key] = Stored(partition: partition, object: SyncObject(key: change.key, version: version, body: change.after.body))
                    }
                }
                result[partition] = changes
            }
            state = next
            return result
        }
    }

    public func find(_ search: ObjectSearch) async throws -> [(partition: Partition, object: SyncObject)] {
        try search.check()
        return all.filter { $0.object.key.collection == search.collection && $0.object.body.map(search.matches) == true }
    }

    public func openSessions(of userID: String) async throws -> Int {
        state.withLock { $0.openSessions[userID] ?? 0 }
    }

    /// The bodies of the live objects of `partition` among `keys` (nothing else writes here
    /// between a handler's read and its write: there is nothing to lock).
    public func bodiesForUpdate(of keys: [ObjectKey], in partition: Partition) async throws -> [ObjectKey: [String: JSONValue]] {
        var bodies: [ObjectKey: [String: JSONValue]] = [:]
        for (found, object) in try await liveObjects(keys) where found == partition { bodies[object.key] = object.body }
        return bodies
    }
}

extension ObjectChange {
    /// The creation of `model` in `partition` as a client's `put` of it would make it (with
    /// `_id` and `partition` set as the server sets them), for checking it with
    /// ``Permissions/check(_:in:by:context:)``.
    public static func creation<Model: SyncModel>(of model: Model, in partition: Partition) throws -> ObjectChange {
        guard case .put(let key, var body) = try model.putOperation() else {
            throw SyncError(.internal, "\(Model.self) does not make a put")
        }
        body["_id"] = .string(key.id)
        body["partition"] = .string(partition.description)
        return ObjectChange(key: key, before: .absent, after: .live(body), encodedBody: nil)
    }
}
