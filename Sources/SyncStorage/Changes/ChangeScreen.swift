import PartitionSync
import SyncProtocol

/// What decides which changes a transaction that lets them go (``WriteTransaction/apply(_:)``
/// in chunks) keeps for its commit's observers: the subscription hub's, the changes that can
/// change a permission decision that depends on their partition (a member's own record listing
/// one more conversation, not its unread count). Asked inside the writing transaction, once per
/// change let go: it must be quick and must not block.
package struct ChangeScreen: Sendable {
    /// A number that grows whenever a decision begins to depend on a partition: a decision
    /// that began after the transaction first asked was not screened for.
    package let generation: @Sendable () -> Int
    /// Whether a change of a partition must be kept.
    package let keeps: @Sendable (Partition, ObjectChange) -> Bool

    package init(generation: @escaping @Sendable () -> Int, keeps: @escaping @Sendable (Partition, ObjectChange) -> Bool) {
        self.generation = generation
        self.keeps = keeps
    }
}
