import SyncProtocol

/// A committed write transaction, as ``ObjectStore/observeCommits(_:)`` reports it to the
/// process that made it.
package struct Commit: Sendable {
    /// The changes of one partition: all of them at one version.
    package struct PartitionChanges: Sendable {
        package var partition: Partition
        /// The version every change of the partition in this transaction committed at.
        package var version: Int64
        /// The last change of each object the transaction changed in the partition, in key
        /// order: what a read of the partition after the previous version returns. `nil` when
        /// the transaction did not keep them (it wrote many large objects, and let go of each
        /// chunk once written): an observer reads the partition instead.
        package var changes: [ObjectChange]?
        /// When ``changes`` is `nil`: the changes of the partition the store's screen kept
        /// (``ObjectStore/screenReleasedChanges(_:)``: those a permission decision that
        /// depends on the partition may need), and any it did not let go of.
        package var kept: [ObjectChange] = []
    }

    /// Every partition the transaction changed, in order.
    package var partitions: [PartitionChanges]
    /// How many change events the transaction recorded.
    package var recordedEvents: Int
    /// The screen's generation (``ChangeScreen/generation``) when the transaction first
    /// screened changes it let go of; `nil` when it let go of none. A decision that began
    /// depending on a partition later was not asked: it must be checked again whatever ``PartitionChanges/kept`` says.
    package var screenedAt: Int? = nil
    /// The PostgreSQL timeline the commit was written on: the timeline of each of its
    /// versions (``PartitionHistory``).
    package var timeline: Int32 = 0
}
