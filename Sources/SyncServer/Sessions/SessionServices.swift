import Logging
import PartitionSync
import SyncStorage

/// The parts of the server a session works with.
struct SessionServices: Sendable {
    let store: ObjectStore
    let hub: SubscriptionHub
    let permissions: Permissions
    let auth: AuthService
    let uploads: UploadService
    let metrics: ServerMetrics
    let presence: PresenceService?
    let userSessions: UserSessionCounts
    /// The registry a session leaves as it ends.
    let sessions: SessionRegistry?
    let configuration: SessionConfiguration
    /// Time for timeouts and token lifetimes (``ServerConfiguration/time``).
    let time: SyncClock
    var logger: Logger

    var permissionContext: PermissionContext { PermissionContext(source: StoreObjectSource(store: store), logger: logger) }
}
