import PartitionSync

/// CouchChat's triggers: what the demo's clients and its "friend bot" daemon did, on the server.
public enum CouchChatTriggers {
    /// A new account gets its profile (nick: the email's local part; invitations from nobody
    /// until the user says otherwise) and an empty room list once its email is verified (at
    /// registration when the server does not verify emails). A deleted account loses both,
    /// and leaves every room: a room it owned alone passes to its first member, or is deleted
    /// when it has none. (The rooms are found through the indexes on `owners` and `members`.)
    public static let accounts = Trigger(name: "couchchat.accounts", kinds: [.user]) { event, context in
        guard let userID = event.userID, let email = event.verifiedEmail?.lowercased() else { return }
        let profile = Profile(email: email, nick: String(email.prefix { $0 != "@" }))
        switch event.operation {
        case .registered, .verified:
            try await context.put(profile, in: CouchChatPartitions.profiles)
            try await context.put(RoomList(userID: userID), in: try CouchChatPartitions.user(userID))
        case .deleted:
            try await context.apply([.delete(try profile.objectKey)], in: CouchChatPartitions.profiles)
            try await context.apply([.delete(try RoomList(userID: userID).objectKey)], in: try CouchChatPartitions.user(userID))
            try await leaveRooms(email, context: context)
        default:
            break
        }
    }

    private static func leaveRooms(_ email: String, context: TriggerContext) async throws {
        var rooms: [String: Partition] = [:]
        for field in ["owners", "members"] {
            for found in try await context.find(Room.self, whereArray: field, contains: .string(email)) {
                rooms[found.model._id] = found.partition
            }
        }
        for (id, partition) in rooms.sorted(by: { $0.key < $1.key }) {
            guard var room = try await context.object(Room.self, id: id) else { continue }
            room.owners.removeAll { $0 == email }
            var members = (room.members ?? []).filter { $0 != email }
            if room.owners.isEmpty {
                guard !members.isEmpty else {
                    try await context.apply([.delete(try room.objectKey)], in: partition)
                    continue
                }
                room.owners = [members.removeFirst()]
            }
            room.members = members.isEmpty ? nil : members
            try await context.save(room, in: partition)
        }
    }

    /// The friend bot: each person an owner lists in a room's `pendingMembers` becomes a
    /// member if their profile accepts invitations from that owner, and is otherwise recorded
    /// in `declinedInvitations` with the reason; either way they leave `pendingMembers`.
    public static let friendBot = Trigger(
        name: "couchchat.friend-bot", collections: [Room.collection], operations: [.insert, .update, .replace],
        where: { event in !(event.after?["pendingMembers"]?.arrayValue ?? []).isEmpty }
    ) { event, context in
        guard let partition = event.partition, let roomID = event.key?.id,
            let invited = try event.after(as: Room.self)?.pendingMembers
        else { return }
        // The owner who listed them: the writer of this change (only owners change a room).
        let inviter = try await context.email(ofUser: event.author)?.lowercased()
        let earlier = Set(try event.before(as: Room.self)?.pendingMembers ?? [])
        let mine = invited.filter { !earlier.contains($0) }
        let profiles = try await context.objects(Profile.self, ids: mine.map(Profile.id(of:)))
        try await context.update(Room.self, id: roomID, in: partition) { room in
            let stillPending = Set(room.pendingMembers ?? [])
            var members = room.members ?? []
            var declined = room.declinedInvitations ?? []
            for email in mine where stillPending.contains(email) {
                declined.removeAll { $0.email == email }
                if room.admits(email) { continue }
                let reason: String? =
                    if let inviter, let profile = profiles[Profile.id(of: email)] {
                        profile.accepts(invitationFrom: inviter) ? nil : "\(email) does not accept invitations from \(inviter)"
                    } else if inviter == nil {
                        "the invitation has no inviting user"
                    } else {
                        "\(email) has no profile"
                    }
                if let reason {
                    declined.append(DeclinedInvitation(email: email, reason: reason))
                } else {
                    members.append(email)
                }
            }
            let left = (room.pendingMembers ?? []).filter { !mine.contains($0) }
            room.pendingMembers = left.isEmpty ? nil : left
            room.members = members.isEmpty ? nil : members
            room.declinedInvitations = declined.isEmpty ? nil : declined
        }
    }

    /// A deleted room takes its chats with it (found through the index on `channel_id`), so no
    /// one who makes a room with its id later finds its history.
    public static let deletedRooms = Trigger(
        name: "couchchat.deleted-rooms", collections: [Room.collection], operations: [.delete]
    ) { event, context in
        guard let roomID = event.key?.id else { return }
        try await context.deleteAll(Chat.self, where: "channel_id", in: [roomID])
    }

    /// Keeps each user's room list (in `user=<userId>`) equal to the rooms that admit them,
    /// with their titles.
    public static let roomLists = Trigger(
        name: "couchchat.room-lists", collections: [Room.collection],
        where: { event in
            event.operation == .insert || event.operation == .delete
                || event.changedFields.contains { ["title", "owners", "members"].contains($0) }
                || event.removedFields.contains { ["title", "owners", "members"].contains($0) }
        }
    ) { event, context in
        guard let roomID = event.key?.id else { return }
        let before = try event.before(as: Room.self)
        let after = try event.after(as: Room.self)
        let people = (before?.everyone ?? []).union(after?.everyone ?? [])
        for email in people.sorted() {
            guard let userID = try await context.userID(ofEmail: email) else { continue }
            let partition = try CouchChatPartitions.user(userID)
            var list = try await context.object(RoomList.self, id: userID) ?? RoomList(userID: userID)
            list.rooms.removeAll { $0.id == roomID }
            if let after, after.admits(email) {
                list.rooms.append(RoomList.Entry(id: roomID, title: after.title))
                list.rooms.sort { ($0.title, $0.id) < ($1.title, $1.id) }
            }
            try await context.save(list, in: partition)
        }
    }
}
