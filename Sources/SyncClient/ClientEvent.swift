import SyncProtocol

/// Whether the client talks to the server.
public enum ConnectionStatus: Sendable, Hashable {
    /// Not connected; writes are queued.
    case offline
    /// Connecting or authenticating.
    case connecting
    /// Connected and authenticated; queued writes are being uploaded.
    case online
}

/// Something the app should know about.
public enum ClientEvent: Sendable, Hashable {
    case status(ConnectionStatus)
    /// The server refused an upload; the local copy was reverted to the server's state.
    case rejected(requestId: String, partition: Partition, error: SyncError)
    /// The server ended a subscription (e.g. `permission_revoked`); the partition is closed.
    case unsubscribed(partition: Partition, code: SyncError.Code)
    /// A request failed (e.g. a subscribe that was refused).
    case error(SyncError, partition: Partition?)
    /// The credentials are no longer valid: log in again.
    case signedOut
    /// The server refused an attached blob for good (`payload_too_large`, `quota_exceeded`):
    /// the writes that reference it will be refused with `blob_missing`.
    case blobRefused(BlobDigest, SyncError)
    /// The local store could not save or read something (a full disk, a damaged file): what
    /// the client was doing, and the error. The client goes on; what failed to be saved is
    /// fetched or sent again when the partition is next reopened or the client restarts.
    case storeFailed(String, String)
}

/// What an observer of a partition sees after each change.
public struct PartitionSnapshot: Sendable, Hashable {
    public var partition: Partition
    /// The objects as the app should show them: the server's, with the pending writes on top.
    public var objects: [SyncObject]
    /// Whether the copy has caught up with the server since the client connected.
    public var upToDate: Bool
    /// Writes to this partition not yet confirmed by the server.
    public var pendingWrites: Int
    /// While a snapshot or catch-up of more than one page arrives: how far it is; `nil`
    /// otherwise (up to date, or small enough to come at once).
    public var progress: SyncProgress?
}

/// How far a partition's snapshot or catch-up is: the objects received so far and the
/// server's count of the whole (an estimate: what commits meanwhile comes too, so `received`
/// may pass `total` before the copy is up to date).
public struct SyncProgress: Sendable, Hashable {
    public var received: Int
    public var total: Int

    public init(received: Int, total: Int) {
        self.received = received
        self.total = total
    }

    /// `received / total`, at most 1: for a progress bar.
    public var fraction: Double { total > 0 ? min(1, Double(received) / Double(total)) : 1 }
}
