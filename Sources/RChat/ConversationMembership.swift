import SyncProtocol

/// Who belongs to a conversation: the record the conversation rule checks.
///
/// It lives in `membership=<conversationId>`, a partition no client may read or write, and
/// only the membership trigger writes it: a conversation's first lister (in commit order)
/// becomes its creator and first member, and a member is added only when an existing member
/// lists them as pending in their own copy of the conversation. A record is never deleted,
/// so a conversation id, once taken, cannot be claimed again by someone else.
struct ConversationMembership: Sendable, Hashable {
    static let collection = "Membership"

    /// The conversation's id.
    var conversation: String
    /// The user id of the first member.
    var creator: String
    /// The user ids of the members, in the order they joined.
    var members: [String]

    static func partition(_ conversation: String) -> Partition {
        try! Partition(key: "membership", value: conversation)
    }

    static func key(_ conversation: String) -> ObjectKey {
        try! ObjectKey(collection: collection, id: conversation)
    }

    init(conversation: String, creator: String, members: [String]) {
        self.conversation = conversation
        self.creator = creator
        self.members = members
    }

    /// The record in a stored body, or `nil` when there is none.
    init?(conversation: String, body: [String: JSONValue]?) {
        guard let body else { return nil }
        self.conversation = conversation
        creator = body["creator"]?.stringValue ?? ""
        members = (body["members"]?.arrayValue ?? []).compactMap(\.stringValue)
    }

    var body: [String: JSONValue] {
        ["conversation": .string(conversation), "creator": .string(creator), "members": .array(members.map(JSONValue.string))]
    }

    func contains(_ userID: String) -> Bool { members.contains(userID) }

    /// Whether `userID` is a member according to a stored body (`nil`: no record).
    static func lists(_ userID: String, in body: [String: JSONValue]?) -> Bool {
        body?["members"]?.arrayValue?.contains(.string(userID)) ?? false
    }
}
