import Logging
import SyncProtocol
import SyncStorage

/// What an application brings to the server: its permission rules and validators, its
/// triggers, and the indexes its searches need.
///
/// ```swift
/// let application = SyncApplication(permissions: permissions, triggers: [unreadCounts], indexes: [try .arrayContains(collection: "User", path: "conversations")])
/// let server = SyncServer(configuration: .init(), database: url, application: application, logger: logger)
/// ```
public struct SyncApplication: Sendable {
    public var permissions: Permissions
    public var triggers: [Trigger]
    public var indexes: [ObjectIndex]

    public init(permissions: Permissions, triggers: [Trigger] = [], indexes: [ObjectIndex] = []) {
        self.permissions = permissions
        self.triggers = triggers
        self.indexes = indexes
    }
}
