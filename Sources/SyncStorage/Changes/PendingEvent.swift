import PartitionSync
import SyncProtocol

/// An event recorded in a write transaction, numbered after commit.
struct PendingEvent {
    var kind: ChangeEvent.Kind
    var operation: ChangeEvent.Operation
    var key: ObjectKey?
    var partition: Partition?
    var version: Int64?
    var userID: String?
    var before: [String: JSONValue]?
    var after: [String: JSONValue]?
    /// `after` as JSON text, when the change had it already.
    var encodedAfter: [UInt8]?
    /// `before` as JSON text, once the event is ``encoded()``.
    var encodedBefore: [UInt8]?
    var changed: [String] = []
    var removed: [String] = []
    var author: String
    var depth: Int

    /// The event of an object change.
    init(
        change: ObjectChange, partition: Partition, version: Int64, author: String, depth: Int,
        labelled label: ChangeEvent.Operation? = nil
    ) {
        self.author = author
        self.depth = depth
        kind = .object
        key = change.key
        self.partition = partition
        self.version = version
        before = change.before.body
        after = change.after.body
        encodedAfter = change.encodedBody
        operation = label ?? ChangeEvent.operation(of: change)
        (changed, removed) = JSONDiff.paths(from: before, to: after)
    }

    /// An event about a user.
    init(kind: ChangeEvent.Kind, operation: ChangeEvent.Operation, userID: String, after: [String: JSONValue]? = nil, author: String, depth: Int) {
        self.author = author
        self.depth = depth
        self.kind = kind
        self.operation = operation
        self.userID = userID
        self.after = after
    }
}

extension PendingEvent {
    /// The event with its bodies as JSON text only (``encodedBefore``, ``encodedAfter``), as
    /// it is recorded: a screened event waiting for the commit holds no trees.
    func encoded() -> PendingEvent {
        var copy = self
        copy.encodedBefore = encodedBefore ?? before.map { JSONValue.object($0).jsonBytes }
        copy.encodedAfter = encodedAfter ?? after.map { JSONValue.object($0).jsonBytes }
        copy.before = nil
        copy.after = nil
        return copy
    }

    /// The event as a trigger will see it (at position 0, made now), for ``EventInterest``.
    var event: ChangeEvent {
        ChangeEvent(
            position: 0, kind: kind, operation: operation, key: key, partition: partition, version: version, userID: userID,
            before: before, after: after, changedFields: changed, removedFields: removed, author: author, depth: depth)
    }
}
