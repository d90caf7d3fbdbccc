import PartitionSync

/// `user=X`: read and written only by user X.
struct UserPartitionRule: PermissionRule {
    func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        principal.userID == partition.value
    }

    func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        principal.userID == partition.value
    }
}

/// `conversation=C`: read and written only by the members of C, as its membership record
/// (``Membership``, written by the server alone) lists them. Listing C in one's
/// own User record grants nothing once C exists; it only claims C while no record exists yet,
/// so that a creator may post at once, before the membership trigger has recorded the new
/// conversation (whoever lists C first in commit order becomes its creator, and everyone else
/// who listed it is dropped). The decision depends on the membership record and on the user's
/// own record: when either changes so that it may flip, open subscriptions are checked again.
struct ConversationRule: PermissionRule {
    func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        try await isMember(principal, partition, context)
    }

    func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        try await isMember(principal, partition, context)
    }

    func inputs(of principal: Principal, for partition: Partition) -> [Partition] {
        guard let userID = principal.userID else { return [] }
        return [Membership.partition(partition.value), RChat.userPartition(userID)]
    }

    /// A change of the conversation's membership that adds or removes the user (or creates
    /// the record), or a change of the user's own record that adds or removes the
    /// conversation; not, say, an unread count.
    func decisions(of principal: Principal, on partition: Partition, canChangeWith change: ObjectChange) -> Bool {
        guard let userID = principal.userID else { return false }
        if change.key == Membership.key(partition.value) {
            return (change.before.body == nil) != (change.after.body == nil)
                || Self.lists(userID, in: change.before.body) != Self.lists(userID, in: change.after.body)
        }
        guard change.key.collection == User.collection, change.key.id == userID else { return false }
        return Self.lists(change.before.body, partition) != Self.lists(change.after.body, partition)
    }

    private static func lists(_ user: [String: JSONValue]?, _ partition: Partition) -> Bool {
        (user?["conversations"]?.arrayValue ?? []).contains { $0["id"] == .string(partition.value) }
    }

    /// Whether a stored membership body lists `userID` (raw: this runs for every change of an input).
    private static func lists(_ userID: String, in membership: [String: JSONValue]?) -> Bool {
        membership?["members"]?.arrayValue?.contains(.string(userID)) ?? false
    }

    private func isMember(_ principal: Principal, _ partition: Partition, _ context: PermissionContext) async throws -> Bool {
        guard let userID = principal.userID else { return false }
        if let membership = try await context.object(Membership.self, id: partition.value) {
            return membership.contains(userID)
        }
        // Not created yet: the user's own listing claims it until the trigger records it.
        guard let user = try await context.object(User.self, id: userID) else { return false }
        return user.conversations.contains { $0.id == partition.value }
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
