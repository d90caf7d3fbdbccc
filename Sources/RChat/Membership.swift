import PartitionSync

/// Who belongs to a conversation: the record the conversation rule checks.
///
/// It lives in `membership=<conversationId>`, a partition no client may read or write, and
/// only the membership trigger writes it: a conversation's first lister (in commit order)
/// becomes its creator and first member, and a member is added only when an existing member
/// lists them as pending in their own copy of the conversation. A record is never deleted,
/// so a conversation id, once taken, cannot be claimed again by someone else.
struct Membership: SyncModel, Hashable {
    static let collection = "Membership"

    /// The conversation's id (the object's id too).
    var _id: String
    /// The user id of the first member.
    var creator: String
    /// The user ids of the members, in the order they joined.
    var members: [String]
    /// The invitations waiting for their invitee's User record: names a member listed pending
    /// while no record had them (an account whose record its registration had still to make).
    /// The invitee's record, once made, finds them here (``MembershipKeeper/welcome(_:_:)``).
    /// Records written before it existed decode with none.
    var invited: [Invitation]

    /// A name listed pending, and the member whose copy lists it.
    struct Invitation: Codable, Hashable, Sendable {
        var userName: String
        var inviter: String
    }

    var conversation: String { _id }

    static func partition(_ conversation: String) -> Partition {
        try! Partition(key: "membership", value: conversation)
    }

    static func key(_ conversation: String) -> ObjectKey {
        try! ObjectKey(collection: collection, id: conversation)
    }

    init(conversation: String, creator: String, members: [String], invited: [Invitation] = []) {
        self._id = conversation
        self.creator = creator
        self.members = members
        self.invited = invited
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        _id = try container.decode(String.self, forKey: ._id)
        creator = try container.decode(String.self, forKey: .creator)
        members = try container.decode([String].self, forKey: .members)
        invited = try container.decodeIfPresent([Invitation].self, forKey: .invited) ?? []
    }

    func contains(_ userID: String) -> Bool { members.contains(userID) }

    /// Keeps `name`'s invitation by `inviter` waiting, unless it is already, or `limit`
    /// invitations wait (the oldest are kept: a member listing names that never register
    /// cannot push out the room's earlier invitations, only stop adding their own).
    mutating func awaitRecord(of name: String, invitedBy inviter: String, limit: Int) {
        let invitation = Invitation(userName: name, inviter: inviter)
        guard !invited.contains(invitation), invited.count < limit else { return }
        invited.append(invitation)
    }
}
