import SyncProtocol

/// A batch of operations on one partition, applied atomically: all commit or none.
public struct Upload: Sendable, Hashable {
    public var partition: Partition
    public var operations: [SyncOperation]
    /// Who uploads: a user id, `apikey:<name>` or `trigger:<name>`. Scopes `requestId`.
    public var principal: String
    /// Makes the upload idempotent per principal: a repeat returns the first outcome and
    /// applies nothing. `nil` for writes that need no such guard.
    public var requestId: String?

    public init(partition: Partition, operations: [SyncOperation], principal: String, requestId: String? = nil) {
        self.partition = partition
        self.operations = operations
        self.principal = principal
        self.requestId = requestId
    }

    /// The longest request id accepted, in characters.
    public static let maximumRequestIDLength = 256
}

/// A committed upload.
public struct UploadResult: Sendable, Hashable {
    public var partition: Partition
    /// The partition version the upload's changes carry.
    public var version: Int64
    /// A cursor at which the upload's effects are visible.
    public var cursor: Cursor
    /// The objects the upload changed, with their states before and after. Empty for a replay.
    public var changes: [ObjectChange]
    /// Whether this is the stored outcome of an earlier upload with the same request id.
    public var isReplay: Bool

    public init(partition: Partition, version: Int64, cursor: Cursor, changes: [ObjectChange], isReplay: Bool) {
        self.partition = partition
        self.version = version
        self.cursor = cursor
        self.changes = changes
        self.isReplay = isReplay
    }
}
