import PartitionSync

extension RChatLimits {
    /// Each limit's environment variable for RChat's server command (`psync`), the values it
    /// takes, and the limit it sets (docs/TRIGGERS.md, "RChat's rules").
    static func variables() -> [(name: String, values: ClosedRange<Int>, limit: WritableKeyPath<RChatLimits, Int>)] {
        [
            ("RCHAT_MAX_CONVERSATION_ID_LENGTH", 1...1_000, \.maximumConversationIDLength),
            ("RCHAT_MAX_DISPLAY_NAME_LENGTH", 1...10_000, \.maximumDisplayNameLength),
            ("RCHAT_MAX_USER_NAME_LENGTH", 1...10_000, \.maximumUserNameLength),
            ("RCHAT_MAX_MEMBERS", 1...100_000, \.maximumMembers),
            ("RCHAT_MAX_CONVERSATIONS", 1...100_000, \.maximumConversations),
            ("RCHAT_MAX_AVATAR_BYTES", 0...(16 << 20), \.maximumAvatarBytes),
            ("RCHAT_INVITATION_BUDGET_BYTES", 0...(16 << 20), \.invitationBudgetBytes),
        ]
    }

    /// The limits an environment sets (`RCHAT_MAX_MEMBERS=5000`), the defaults where it sets
    /// none. A value that is not a whole number in its range is refused (`bad_request`),
    /// naming the variable and the values it takes: a server does not start on a limit it
    /// would misread.
    public init(environment: [String: String]) throws(SyncError) {
        self.init()
        for (name, values, limit) in Self.variables() {
            guard let text = environment[name] else { continue }
            guard let value = Int(text), values.contains(value) else {
                throw SyncError(
                    .badRequest, "\(name) takes a whole number from \(values.lowerBound) to \(values.upperBound), not '\(text)'")
            }
            self[keyPath: limit] = value
        }
    }
}
