import Logging
import SyncProtocol

/// What an application brings to the server: its permission rules and validators, its
/// triggers, the indexes its searches need, the counters its triggers raise, and optionally its
/// web app (served at `/app/`).
///
/// ```swift
/// let application = SyncApplication(permissions: permissions, triggers: [unreadCounts], indexes: [.arrayContains(collection: "User", path: "conversations")])
/// let server = SyncServer(configuration: .init(), database: url, application: application, logger: logger)
/// ```
public struct SyncApplication: Sendable {
    public var permissions: Permissions
    public var triggers: [Trigger]
    public var indexes: [ObjectIndex]
    /// The numbers its triggers raise often, kept beside the bodies (``ObjectCounter``).
    public var counters: [ObjectCounter]
    /// The web app the server serves at `/app/` (and `/` redirects to), or `nil` for none.
    public var web: WebApp?
    /// How `import` brings the application's MongoDB data in (docs/MIGRATING.md).
    public var importing: ImportMapping

    public init(
        permissions: Permissions, triggers: [Trigger] = [], indexes: [ObjectIndex] = [], counters: [ObjectCounter] = [],
        web: WebApp? = nil, importing: ImportMapping = ImportMapping()
    ) {
        self.permissions = permissions
        self.triggers = triggers
        self.indexes = indexes
        self.counters = counters
        self.web = web
        self.importing = importing
    }
}
