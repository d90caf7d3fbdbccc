import Logging
import SyncProtocol
import SyncStorage

/// What a permission rule can read: committed objects and accounts (``ObjectReading``).
public struct PermissionContext: ObjectReading, Sendable {
    let store: ObjectStore
    public let logger: Logger

    package init(store: ObjectStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// The live object under `key` with its version, or `nil` when it does not exist or is deleted.
    public func object(_ key: ObjectKey) async throws -> SyncObject? {
        try await store.objects([key]).first.flatMap { $0.object.isDeleted ? nil : $0.object }
    }

    public func bodies(of keys: [ObjectKey]) async throws -> [ObjectKey: [String: JSONValue]] {
        var bodies: [ObjectKey: [String: JSONValue]] = [:]
        for (_, object) in try await store.objects(keys) { bodies[object.key] = object.body }
        return bodies
    }

    public func email(ofUser userID: String) async throws -> String? {
        try await AccountStore(store: store).email(of: userID)
    }

    public func userID(ofEmail email: String) async throws -> String? {
        try await AccountStore(store: store).userID(ofEmail: email)
    }
}
