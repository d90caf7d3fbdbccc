import SyncProtocol

/// The paths RChat's handlers write, built from components: an id or a userName is a value
/// of a selector, never path syntax, so no id can make a path invalid or address another field.
enum RChatPaths {
    static let conversations = try! Path([.field("conversations")])
    static let presence = try! Path([.field("presence")])
    static let lastSeenAt = try! Path([.field("lastSeenAt")])

    /// `conversations[id=<conversation>].unreadCount`.
    static func unreadCount(_ conversation: String) -> Path {
        try! Path([.field("conversations"), .match(field: "id", value: conversation), .field("unreadCount")])
    }

    /// `conversations[id=<conversation>].members[userName=<userName>].membershipStatus`.
    static func membershipStatus(_ conversation: String, _ userName: String) -> Path {
        try! Path([
            .field("conversations"), .match(field: "id", value: conversation),
            .field("members"), .match(field: "userName", value: userName), .field("membershipStatus"),
        ])
    }
}
