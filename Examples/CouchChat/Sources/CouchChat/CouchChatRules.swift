import PartitionSync

/// Who reads and writes which partition: the sync function's `access()` grants and channels,
/// as permission rules.
///
/// A user is named by their account's email, lowercased (``EmailName``, `context.emailName(of:)`).

/// `profiles=all`: every user reads every profile (to pick whom to invite). Users write here,
/// but ``CouchChatValidator`` lets each write only their own profile.
struct ProfilesRule: PermissionRule {
    func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        principal.userID != nil
    }

    func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        principal.userID != nil
    }
}

/// `room=R`: read and written by the owners and members of room R's document, exactly while
/// it lists them; the document is changed only by its owners (``CouchChatValidator``) and the
/// friend bot, so nobody lets themselves in. A room that does not exist yet may be written (to
/// create it: the validator takes only a room document naming the writer as its owner), not
/// read. The decision depends on the room document: when it changes, open subscriptions are
/// checked again and end with `permission_revoked` for whoever it no longer admits.
struct RoomRule: PermissionRule {
    func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        guard let name = try await context.emailName(of: principal) else { return false }
        return try await context.object(Room.self, id: partition.value)?.admits(name) ?? false
    }

    func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        guard let name = try await context.emailName(of: principal) else { return false }
        guard let room = try await context.object(Room.self, id: partition.value) else { return true }
        return room.admits(name)
    }

    func inputs(of principal: Principal, for partition: Partition) -> [Partition] {
        [partition]
    }

    /// Only a change of the room document itself, and of whom it admits.
    func decisions(of principal: Principal, on partition: Partition, canChangeWith change: ObjectChange) -> Bool {
        guard change.key.collection == Room.collection, change.key.id == partition.value else { return false }
        return Self.admitted(change.before.body) != Self.admitted(change.after.body)
    }

    /// Owners and members in a stored room body (raw: this runs for every change of the room).
    private static func admitted(_ body: [String: JSONValue]?) -> Set<String> {
        let names = (body?["owners"]?.arrayValue ?? []) + (body?["members"]?.arrayValue ?? [])
        return Set(names.compactMap(\.stringValue))
    }
}

/// `user=U`: user U reads their room list; only the server writes it.
struct UserRule: PermissionRule {
    func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        principal.userID == partition.value
    }

    func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        false
    }
}
