import SyncProtocol

/// The partitions of RChat.
public enum RChatPartitions {
    /// `all-users=all-the-users`: every Chatster.
    public static let allUsers = try! Partition("all-users=all-the-users")

    /// `user=<userId>`: the user's own User record.
    public static func user(_ userID: String) -> Partition {
        try! Partition(key: "user", value: userID)
    }

    /// `conversation=<conversationId>`: the messages of a conversation.
    public static func conversation(_ conversationID: String) -> Partition {
        try! Partition(key: "conversation", value: conversationID)
    }
}
