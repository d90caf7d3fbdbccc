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

/// What becomes of one upload of a batch in its transaction.
package enum UploadStep: Sendable, Hashable {
    /// Applied at the partition's version of the transaction, written on `timeline`
    /// (``PartitionHistory``), with these changes (written at commit).
    case applied(version: Int64, timeline: Int32, changes: [ObjectChange])
    /// Refused: nothing of it is written; its outcome is stored when it has a request id.
    case refused(SyncError)
    /// Its request id was answered already (before this batch, or earlier in it): the stored
    /// outcome is the answer, read after the commit.
    case repeated

    var isApplied: Bool {
        if case .applied = self { return true }
        return false
    }
}

/// Scopes a request id: the same id from two principals names two requests.
package struct RequestKey: Sendable, Hashable {
    package var principal: String
    package var requestId: String

    package init(principal: String, requestId: String) {
        self.principal = principal
        self.requestId = requestId
    }
}

extension Upload {
    /// The key its outcome is stored under; `nil` without a request id.
    package var requestKey: RequestKey? {
        requestId.map { RequestKey(principal: principal, requestId: $0) }
    }
}

extension SyncError {
    /// Whether this error refuses an upload (the client's to fix: it is final and recorded),
    /// rather than failing it for now (`internal`, `unavailable`: the client sends it again).
    package var isRefusal: Bool { code != .internal && code != .unavailable }
}
