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

    var conversation: String { _id }

    static func partition(_ conversation: String) -> Partition {
        try! Partition(key: "membership", value: conversation)
    }

    static func key(_ conversation: String) -> ObjectKey {
        try! ObjectKey(collection: collection, id: conversation)
    }

    init(conversation: String, creator: String, members: [String]) {
        self._id = conversation
        self.creator = creator
        self.members = members
    }

    func contains(_ userID: String) -> Bool { members.contains(userID) }
}
