import Locking
import PartitionSync

/// RChat's write validation, inside the upload transaction:
/// - each partition key holds only its own collection (no ChatMessage in a user partition, no
///   User in a conversation);
/// - a ChatMessage's `author` is the writer's own userName, and only the author may change or
///   delete a message;
/// - a User record is created and deleted by the server only, and what its owner writes into it
///   keeps the model's shape and ``RChatLimits`` (``UserRecordCheck``; `_id` and `partition`
///   the engine already protects).
struct RChatValidator: WriteValidator {
    let limits: RChatLimits

    /// Users' names, read once: a userName never changes (see below), so a message's author
    /// check costs no read after the user's first message.
    let userNames = UserNames()

    func validate(_ change: ObjectChange, in partition: Partition, by principal: Principal, context: ValidationContext) async throws {
        guard case .user(let userID) = principal else { return }
        let collection = change.key.collection
        guard RChat.collections[partition.kind] == collection else {
            let home = RChat.collections.first { $0.value == collection }.map { " (\(collection) lives in \($0.key) partitions)" } ?? ""
            throw SyncError(.validationFailed, "\(partition.key) partitions hold \(RChat.collections[partition.kind] ?? "nothing"), not \(collection)\(home)")
        }
        switch collection {
        case ChatMessage.collection:
            let own = try await userName(of: userID, context)
            if let author = change.before.body?["author"], author != .string(own) {
                throw SyncError(.validationFailed, "only the author of a message may change or delete it")
            }
            if let after = change.after.body, after["author"] != .string(own) {
                throw SyncError(.validationFailed, "a ChatMessage's author must be your own userName")
            }
        case User.collection:
            switch (change.before, change.after) {
            case (.live(let before), .live(let after)):
                try UserRecordCheck(limits: limits).check(before: before, after: after)
                // The triggers and rules read User records as the model: a record that would
                // not decode (an avatar without its date, say) is refused here, not found later.
                guard (try? User.decode(after, of: change.key)) != nil else {
                    throw SyncError(.validationFailed, "the User record would not match the model (docs/TRIGGERS.md, RChat's User record)")
                }
            case (.live, _):
                throw SyncError(.validationFailed, "a User record is deleted with the account, not by the client")
            default:
                throw SyncError(.validationFailed, "a User record is created by the server when the account is registered")
            }
        default:
            break
        }
    }

    private func userName(of userID: String, _ context: ValidationContext) async throws -> String {
        if let name = userNames[userID] { return name }
        guard let name = try await context.body(of: RChat.userKey(userID))?["userName"]?.stringValue else {
            throw SyncError(.validationFailed, "your User record does not exist yet")
        }
        userNames[userID] = name
        return name
    }
}

/// A bounded map from user ids to their userNames, shared by the validator's copies.
final class UserNames: Sendable {
    private static let capacity = 100_000
    private let names = Locked<[String: String]>([:])

    subscript(userID: String) -> String? {
        get { names.withLock { $0[userID] } }
        set {
            names.withLock { names in
                if names.count >= Self.capacity { names.removeAll(keepingCapacity: true) }
                names[userID] = newValue
            }
        }
    }
}
