import SyncProtocol

/// A committed write transaction, as ``ObjectStore/observeCommits(_:)`` reports it to the
/// process that made it.
public struct Commit: Sendable {
    /// The changes of one partition: all of them at one version.
    public struct PartitionChanges: Sendable {
        public var partition: Partition
        /// The version every change of the partition in this transaction committed at.
        public var version: Int64
        /// The last change of each object the transaction changed in the partition, in key
        /// order: what a read of the partition after the previous version returns.
        public var changes: [ObjectChange]
    }

    /// Every partition the transaction changed, in order.
    public var partitions: [PartitionChanges]
    /// How many change events the transaction recorded.
    public var recordedEvents: Int
}
