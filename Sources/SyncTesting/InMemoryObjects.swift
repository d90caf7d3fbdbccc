import Foundation
import Locking
import PartitionSync
import SyncProtocol

/// Objects and accounts in memory, for testing an application's permission rules and write
/// validators in-process: a ``PermissionContext`` or a ``ValidationContext`` made on it reads
/// them as the server's would read the database, in milliseconds and without PostgreSQL.
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

    public func liveObjects(_ keys: [ObjectKey]) async throws -> [(partition: Partition, object: SyncObject)] {
        state.withLock { state in
            keys.compactMap { key in state.objects[key].map { ($0.partition, $0.object) } }
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
