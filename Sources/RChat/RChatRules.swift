import SyncProtocol
import SyncServer

/// `user=X`: read and written only by user X.
struct UserPartitionRule: PermissionRule {
    func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        principal.userID == partition.value
    }

    func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        principal.userID == partition.value
    }
}

/// `conversation=C`: read and written only by users whose own User record lists C. The rule
/// reads the User record, so it depends on the user's partition: when the user leaves the
/// conversation, their subscription to it ends.
struct ConversationRule: PermissionRule {
    func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        try await isMember(principal, partition, context)
    }

    func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        try await isMember(principal, partition, context)
    }

    func inputs(of principal: Principal, for partition: Partition) -> [Partition] {
        principal.userID.map { [RChat.userPartition($0)] } ?? []
    }

    /// Only a change of the user's own User record that adds or removes this conversation;
    /// not, say, its unread count.
    func decisions(of principal: Principal, on partition: Partition, canChangeWith change: ObjectChange) -> Bool {
        guard change.key.collection == User.collection, change.key.id == principal.userID else { return false }
        return Self.lists(change.before.body, partition) != Self.lists(change.after.body, partition)
    }

    private static func lists(_ user: [String: JSONValue]?, _ partition: Partition) -> Bool {
        (user?["conversations"]?.arrayValue ?? []).contains { $0["id"] == .string(partition.value) }
    }

    private func isMember(_ principal: Principal, _ partition: Partition, _ context: PermissionContext) async throws -> Bool {
        guard let userID = principal.userID else { return false }
        guard let user = try await context.object(ObjectKey(collection: User.collection, id: userID)) else { return false }
        return Self.lists(user.body, partition)
    }
}

/// `all-users=…`: every user (and service) reads; no client writes (the Chatster trigger does).
struct AllUsersRule: PermissionRule {
    func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        switch principal {
        case .user, .service, .system: true
        }
    }

    func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        false
    }
}
