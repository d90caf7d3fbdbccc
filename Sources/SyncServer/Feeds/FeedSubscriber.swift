import NIOCore
import PartitionSync
import SyncProtocol
import SyncStorage

/// A subscription's place in a partition's history: a complete version, or a version
/// delivered up to and including one object (pages may split a commit).
struct FeedPosition: Sendable, Hashable, Comparable {
    var version: Int64
    var after: ObjectKey?

    init(version: Int64, after: ObjectKey? = nil) {
        self.version = version
        self.after = after
    }

    /// The place of a position in the partition's history (its database and a snapshot's
    /// tombstone floor aside).
    init(_ position: CursorPosition) {
        self.init(version: position.version, after: position.after)
    }

    static func < (lhs: FeedPosition, rhs: FeedPosition) -> Bool {
        if lhs.version != rhs.version { return lhs.version < rhs.version }
        switch (lhs.after, rhs.after) {
        case (nil, nil): return false
        case (_?, nil): return true  // part of a version comes before all of it
        case (nil, _?): return false
        case (let a?, let b?): return a < b
        }
    }

    /// Whether an object at `version` with `key` comes after this position.
    func precedes(version objectVersion: Int64, key: ObjectKey) -> Bool {
        if objectVersion != version { return objectVersion > version }
        guard let after else { return false }
        return after < key
    }
}

/// What the hub needs of a session: it hands over committed pages of partitions the session
/// follows live, and tells it when a permission input changed.
///
/// The hub never calls a subscriber under its lock (it collects what to hand over under it and
/// calls after); a call must still not block: it runs on the committing or reading task.
protocol FeedSubscriber: AnyObject, Sendable {
    /// Queues a page for a live subscription, which ends at `end`; `false` when the
    /// subscription is no longer live there (ended, or its queue overflowed and it will catch
    /// up on its own).
    func deliver(partition: Partition, generation: Int, end: CursorPosition, bytes: ByteBuffer, objectCount: Int) -> Bool
    /// The partition's live feed cannot continue (its cursor was reset): catch up alone.
    func resync(partition: Partition, generation: Int)
    /// Something a permission decision of this session depends on has changed (a partition
    /// was committed to, an absent object was created): with the commit's changes of it when
    /// this instance made the commit, `nil` when they are not known.
    func permissionInputChanged(_ input: PermissionInput, changes: [ObjectChange]?)
    /// Whether `changes` of `input` can change one of this session's permission decisions
    /// that depend on it (asked inside a writing transaction that lets go of its changes:
    /// quick, and without blocking).
    func permissionDecisions(dependingOn input: PermissionInput, canChangeWith changes: [ObjectChange]) -> Bool
}
