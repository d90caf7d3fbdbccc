import SyncProtocol

/// RChat's kinds of partition.
extension PartitionKind {
    /// `all-users=all-the-users`: every Chatster.
    public static let allUsers = PartitionKind("all-users")
    /// `user=<userId>`: the user's own User record.
    public static let user = PartitionKind("user")
    /// `conversation=<conversationId>`: the messages of a conversation.
    public static let conversation = PartitionKind("conversation")
}

/// The partitions of RChat.
public enum RChatPartitions {
    /// `all-users=all-the-users`: every Chatster.
    public static let allUsers = try! Partition("all-users=all-the-users")

    /// `user=<userId>`: the user's own User record.
    public static func user(_ userID: String) -> Partition {
        try! PartitionKind.user(userID)
    }

    /// `conversation=<conversationId>`: the messages of a conversation.
    public static func conversation(_ conversationID: String) -> Partition {
        try! PartitionKind.conversation(conversationID)
    }
}
