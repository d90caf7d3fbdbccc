import PartitionSync

/// The paths RChat's handlers write, built from components: an id or a userName is a value
/// of a selector, never path syntax, so no id can make a path invalid or address another field.
enum RChatPaths {
    static let conversations = Path.field("conversations")

    /// `conversations[id=<conversation>].unreadCount`.
    static func unreadCount(_ conversation: String) throws(SyncError) -> Path {
        try conversations.element(where: "id", is: conversation).field("unreadCount")
    }

    /// `conversations[id=<conversation>].members[userName=<userName>].membershipStatus`.
    static func membershipStatus(_ conversation: String, _ userName: String) throws(SyncError) -> Path {
        try conversations.element(where: "id", is: conversation).field("members").element(where: "userName", is: userName).field("membershipStatus")
    }
}
