/// The bounds RChat puts on what a user writes into their own User record and on what an
/// invitation may add to someone else's, so that no user can grow another's record or push
/// large data to every subscriber of `all-users`.
///
/// ```swift
/// let application = RChat.application(limits: RChatLimits(maximumMembers: 500))
/// ```
public struct RChatLimits: Sendable, Hashable {
    /// The longest conversation id, in characters; ids are `[A-Za-z0-9_-]`. Default 64.
    public var maximumConversationIDLength: Int
    /// The longest display name of a conversation or a user, in characters. Default 100.
    public var maximumDisplayNameLength: Int
    /// The longest member userName (an email address), in characters. Default 254.
    public var maximumUserNameLength: Int
    /// The most members a conversation lists, and the most invitations of one that wait for
    /// their invitee's User record (``Membership/invited``). Default 2,000.
    public var maximumMembers: Int
    /// The most conversations a user's own writes may list. Default 500.
    public var maximumConversations: Int
    /// The largest `userPreferences.avatarImage`, in bytes of compact JSON: it is copied into
    /// the public Chatster and sent to every user. Default 64 KiB.
    public var maximumAvatarBytes: Int
    /// An invitation is delivered only while the invitee's User record stays under this many
    /// bytes of compact JSON with it, and while the invitee lists fewer than
    /// ``maximumConversations``; otherwise the member stays pending. Default 512 KiB (half
    /// the engine's body limit, so the owner can always still write).
    public var invitationBudgetBytes: Int

    public init(
        maximumConversationIDLength: Int = 64, maximumDisplayNameLength: Int = 100, maximumUserNameLength: Int = 254,
        maximumMembers: Int = 2_000, maximumConversations: Int = 500, maximumAvatarBytes: Int = 64 << 10,
        invitationBudgetBytes: Int = 512 << 10
    ) {
        self.maximumConversationIDLength = maximumConversationIDLength
        self.maximumDisplayNameLength = maximumDisplayNameLength
        self.maximumUserNameLength = maximumUserNameLength
        self.maximumMembers = maximumMembers
        self.maximumConversations = maximumConversations
        self.maximumAvatarBytes = maximumAvatarBytes
        self.invitationBudgetBytes = invitationBudgetBytes
    }

    /// Whether `id` can name a conversation: 1 to ``maximumConversationIDLength`` characters
    /// of `A-Z a-z 0-9 _ -`, so it is safe in a partition value, a path selector and a log line.
    public func isConversationID(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= maximumConversationIDLength else { return false }
        return id.utf8.allSatisfy { byte in
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}
