import SyncProtocol

/// A batch of operations on one partition, applied atomically: all commit or none.
package struct Upload: Sendable, Hashable {
    package var partition: Partition
    package var operations: [SyncOperation]
    /// Who uploads: a user id, `apikey:<name>` or `trigger:<name>`. Scopes `requestId`.
    package var principal: String
    /// Makes the upload idempotent per principal: a repeat returns the first outcome and
    /// applies nothing. `nil` for writes that need no such guard.
    package var requestId: String?

    package init(partition: Partition, operations: [SyncOperation], principal: String, requestId: String? = nil) {
        self.partition = partition
        self.operations = operations
        self.principal = principal
        self.requestId = requestId
    }

    /// The longest request id accepted, in characters.
    package static let maximumRequestIDLength = 256
}

/// A committed upload.
package struct UploadResult: Sendable, Hashable {
    package var partition: Partition
    /// The partition version the upload's changes carry.
    package var version: Int64
    /// A cursor at which the upload's effects are visible.
    package var cursor: Cursor
    /// The objects the upload changed, with their states before and after. Empty for a replay.
    package var changes: [ObjectChange]
    /// Whether this is the stored outcome of an earlier upload with the same request id.
    package var isReplay: Bool

    package init(partition: Partition, version: Int64, cursor: Cursor, changes: [ObjectChange], isReplay: Bool) {
        self.partition = partition
        self.version = version
        self.cursor = cursor
        self.changes = changes
        self.isReplay = isReplay
    }
}
