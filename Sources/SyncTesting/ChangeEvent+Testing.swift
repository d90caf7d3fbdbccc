import Foundation
import PartitionSync
import SyncProtocol

extension ChangeEvent {
    /// The event the server records for `change` in `partition`, written by `author`: what a
    /// trigger handler receives, for running one in-process on ``InMemoryObjects``.
    ///
    /// ```swift
    /// let change = try ObjectChange.creation(of: room, in: partition)
    /// try await CouchChatTriggers.roomLists.handler(.object(change, in: partition, author: "u-ann"), TriggerContext(transaction: objects))
    /// ```
    public static func object(_ change: ObjectChange, in partition: Partition, author: String, position: Int64 = 0, version: Int64? = nil) -> ChangeEvent {
        let (changed, removed) = JSONDiff.paths(from: change.before.body, to: change.after.body)
        return ChangeEvent(
            position: position, kind: .object, operation: ChangeEvent.operation(of: change), key: change.key, partition: partition, version: version,
            before: change.before.body, after: change.after.body, changedFields: changed, removedFields: removed, author: author)
    }

    /// The event of a user account `registered`, `verified` or `deleted`, as the server records it.
    public static func user(_ operation: Operation, userID: String, email: String, verified: Bool = true, position: Int64 = 0) -> ChangeEvent {
        ChangeEvent(
            position: position, kind: .user, operation: operation, userID: userID,
            after: ["email": .string(email), "emailVerified": .bool(verified)], author: "system:auth")
    }
}
