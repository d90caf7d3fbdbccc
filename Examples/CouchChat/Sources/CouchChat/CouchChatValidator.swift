import PartitionSync

/// The sync function's validation and routing, run on every change of an upload in its
/// transaction (so reads see the upload's own changes); a refusal is `validation_failed`
/// with the reason, and nothing of the upload is written.
///
/// Routing: `profiles=all` holds profiles, `room=R` the room R and its chats, and nothing
/// else goes anywhere; every document's `type` is its collection and it decodes as its model.
///
/// The seed's three rules:
/// - a profile's id is `profile:<the writer's email>`: only its owner writes it;
/// - a room lists its creator as its only owner when it is created, and only an owner may
///   change it: its title, its owners (an owner adds only people already in the room) and its
///   members (an owner may remove members; only the friend bot adds them, from
///   `pendingMembers`); a member may only leave it (remove themselves from `members`);
/// - a chat's `author` is the writer: nobody signs as someone else, or edits another's chat;
///   its `channel_id` is its room, which must exist and admit the writer.
struct CouchChatValidator: WriteValidator {
    /// The most owners, members or pending members a room lists.
    static let maximumPeople = 1_000
    /// The longest room title, in characters.
    static let maximumTitleLength = 200

    func validate(_ change: ObjectChange, in partition: Partition, by principal: Principal, context: ValidationContext) async throws {
        guard let name = try await context.emailName(of: principal) else {
            throw SyncError.refusal("only users write CouchChat documents")
        }
        switch (partition.kind, change.key.collection) {
        case (.profiles, Profile.collection):
            try checkProfile(change, writer: name)
        case (.room, Room.collection):
            try checkRoom(change, in: partition, writer: name)
        case (.room, Chat.collection):
            try await checkChat(change, in: partition, writer: name, context: context)
        default:
            throw SyncError.refusal("a \(partition.key) partition holds no \(change.key.collection) documents")
        }
    }

    private func checkProfile(_ change: ObjectChange, writer: String) throws {
        guard change.key.id == Profile.id(of: writer) else {
            throw SyncError.refusal("you can only write your own profile, \(Profile.id(of: writer))")
        }
        guard let profile = try Profile.validating(change.after.body, of: change.key) else { return }
        guard profile.email.lowercased() == writer else { throw SyncError.refusal("a profile's email is its owner's") }
    }

    private func checkRoom(_ change: ObjectChange, in partition: Partition, writer: String) throws {
        guard change.key.id == partition.value else { throw SyncError.refusal("room \(change.key.id) lives in room=\(change.key.id)") }
        let before = try Room.validating(change.before.body, of: change.key)
        let after = try Room.validating(change.after.body, of: change.key)
        if let before, !before.owners.contains(writer) {
            guard after != nil, let beforeBody = change.before.body, let afterBody = change.after.body,
                Self.isLeaving(writer, before: beforeBody, after: afterBody)
            else {
                throw SyncError.refusal("only an owner may change or delete a room; a member may only leave it")
            }
            return
        }
        guard let after else { return }
        guard after.channel_id == after._id else { throw SyncError.refusal("a room's channel_id is its id") }
        guard !after.title.isEmpty, after.title.count <= Self.maximumTitleLength else {
            throw SyncError.refusal("a room's title has 1 to \(Self.maximumTitleLength) characters")
        }
        for list in [after.owners, after.members ?? [], after.pendingMembers ?? []] {
            guard list.count <= Self.maximumPeople, list.allSatisfy(EmailName.isValid) else {
                throw SyncError.refusal("owners, members and pending members are at most \(Self.maximumPeople) lowercase email addresses")
            }
        }
        guard let before else {
            // Whoever made a deleted room again would own the chats its deletion has not yet
            // taken with it (couchchat.deleted-rooms): its id is not used again.
            guard change.before != .deleted else { throw SyncError.refusal("room \(change.key.id) was deleted: a new room takes a new id") }
            guard after.owners == [writer], (after.members ?? []).isEmpty, (after.declinedInvitations ?? []).isEmpty else {
                throw SyncError.refusal("a new room has its creator as its only owner, and no members yet (invite them in pendingMembers)")
            }
            return
        }
        guard !after.owners.isEmpty, Set(after.owners).isSubset(of: before.everyone) else {
            throw SyncError.refusal("a room keeps an owner, and an owner adds as owners only people already in the room")
        }
        guard Set(after.members ?? []).isSubset(of: Set(before.members ?? [])) else {
            throw SyncError.refusal("members join through pendingMembers, by their profile's consent; an owner may only remove members")
        }
        guard Set(after.declinedInvitations ?? []).isSubset(of: Set(before.declinedInvitations ?? [])) else {
            throw SyncError.refusal("declined invitations are recorded by the server; an owner may only clear them")
        }
    }

    private func checkChat(_ change: ObjectChange, in partition: Partition, writer: String, context: ValidationContext) async throws {
        if let before = try Chat.validating(change.before.body, of: change.key), before.author != writer {
            throw SyncError.refusal("only the author of a chat may change or delete it")
        }
        guard let chat = try Chat.validating(change.after.body, of: change.key) else { return }
        guard chat.author == writer else { throw SyncError.refusal("a chat's author is its writer, \(writer)") }
        guard chat.channel_id == partition.value else { throw SyncError.refusal("a chat's channel_id is the room it is in, \(partition.value)") }
        guard let room = try await context.object(Room.self, id: partition.value), room.admits(writer) else {
            throw SyncError.refusal("a chat goes into a room that exists and admits you")
        }
    }

    /// Whether `after` is `before` with `member` gone from its `members`, and nothing else of
    /// the document changed (compared as stored, unknown fields included): how a member leaves
    /// a room.
    static func isLeaving(_ member: String, before: [String: JSONValue], after: [String: JSONValue]) -> Bool {
        let members = before["members"]?.arrayValue ?? []
        guard members.contains(.string(member)) else { return false }
        var expected = before
        let remaining = members.filter { $0 != .string(member) }
        expected["members"] = .array(remaining)
        var found = after
        if found["members"] == nil || found["members"] == .null { found["members"] = .array([]) }
        return found == expected
    }
}
