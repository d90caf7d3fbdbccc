import Foundation
import PartitionSync

/// RChat's triggers: they keep the duplicated data of the RChat model consistent, as the
/// article's Realm triggers did, and keep the conversations' membership records.
public enum RChatTriggers {
    /// Every trigger, with the default ``RChatLimits``.
    public static var all: [Trigger] { all(limits: RChatLimits()) }

    /// Every trigger, with `limits` for the invitations.
    public static func all(limits: RChatLimits) -> [Trigger] {
        [userRegistered, userDeleted, userChanged(limits: limits), unreadCounts, presence]
    }

    /// A new account gets its User record and its Chatster, On-Line if the user has a session
    /// open already: ``presence`` may have handled that session's event before the record
    /// existed, and passed it over. The user name is the account's email, so the records are
    /// made once it is verified: at registration when the server does not verify emails, or
    /// when the owner enters the code (docs/SECURITY.md, "Identity").
    ///
    /// An account that has its User record already (an account imported with its data,
    /// docs/MIGRATING.md, verifying its email later) keeps it as it is.
    public static let userRegistered = Trigger(name: "rchat.user-registered", kinds: [.user], operations: [.registered, .verified]) { event, context in
        guard let userID = event.userID, let email = event.verifiedEmail else { return }
        if event.operation == .verified, try await context.body(of: RChat.userKey(userID)) != nil { return }
        // Under the user's presence lock: a session opening after this read commits after this
        // transaction, so its event finds the record.
        let online = try await context.openSessions(of: userID) > 0
        let user = User(
            _id: userID, userName: email, userPreferences: UserPreferences(displayName: email), presence: online ? .onLine : .offLine)
        try await context.apply([
            // The article's User starts with lastSeenAt null (the encoder leaves a nil out).
            RChat.userPartition(userID): [try user.putOperation(), .set(RChat.userKey(userID), path: .field("lastSeenAt"), value: .null)],
            RChat.allUsers: [try Chatster(mirroring: user).putOperation()],
        ])
    }

    /// A deleted account takes its User record and Chatster with it (and, through
    /// ``userChanged``, its memberships).
    public static let userDeleted = Trigger(name: "rchat.user-deleted", kinds: [.user], operations: [.deleted]) { event, context in
        guard let userID = event.userID else { return }
        try await context.apply([
            RChat.userPartition(userID): [.delete(RChat.userKey(userID))],
            RChat.allUsers: [.delete(RChat.chatsterKey(userID))],
        ])
    }

    /// Keeps the Chatster equal to the User record, and keeps the conversations' membership
    /// records (see ``MembershipKeeper``): a conversation a user lists first is created with
    /// them as its member; pending members a member lists are brought in; a conversation
    /// listed without membership is taken out of the record; leaving ends the membership.
    /// Changes of other fields (such as unread counts) are passed over without a transaction.
    public static let userChanged = userChanged(limits: RChatLimits())

    static func userChanged(limits: RChatLimits) -> Trigger {
        Trigger(
            name: userChangedName, collections: [User.collection], where: concernsChatsterOrMembers,
            images: .withoutUnchanged(["conversations"])
        ) { event, context in
            guard let userID = event.key?.id else { return }
            let keeper = MembershipKeeper(limits: limits, context: context)
            // An update or a replace that leaves the conversations as they were is handed over
            // without them (``ChangeEvent/Images``): read, sent and parsed for every presence,
            // they were 0.8 MB an event in a room of 5,000.
            guard (event.operation != .update && event.operation != .replace) || concernsMembers(event) else {
                // The Chatster's fields alone (a presence, a display name): the records are read
                // without their conversations, which list every member of every room of the
                // user's (0.4 MB for a room of 5,000) and have nothing to reconcile.
                guard let after = try withoutConversations(event.after, of: event) else { return }
                if try withoutConversations(event.before, of: event).map(Chatster.init(mirroring:)) != Chatster(mirroring: after) {
                    try await context.save(Chatster(mirroring: after), in: RChat.allUsers)
                }
                return
            }
            let before = try event.before(as: User.self)
            guard let user = try event.after(as: User.self) else {
                try await context.apply([.delete(RChat.chatsterKey(userID))], in: RChat.allUsers)
                try await keeper.leave(userID, conversations: MembershipKeeper.conversationIDs(of: before))
                return
            }
            let chatster = Chatster(mirroring: user)
            if event.operation == .import {
                // Imported with its data (docs/MIGRATING.md): the Chatster was exported too,
                // and is made only if it was not; the conversations listed are memberships.
                if try await context.body(of: RChat.chatsterKey(userID)) == nil { try await context.save(chatster, in: RChat.allUsers) }
                try await keeper.adopt(userID, user)
                try await keeper.welcome(userID, user)
                return
            }
            if event.operation == .insert || before.map(Chatster.init(mirroring:)) != chatster {
                try await context.save(chatster, in: RChat.allUsers)
            }
            try await keeper.reconcile(userID, before: before, after: user)
            if event.operation == .insert { try await keeper.welcome(userID, user) }
        }
    }

    /// The membership trigger's name, and the author of its own writes.
    static let userChangedName = "rchat.user-changed"
    static let userChangedAuthor = "trigger:" + userChangedName

    /// Each new message raises the unread count of its conversation in every member's User
    /// record. The messages of a run are counted per conversation first, so each member's
    /// count is raised once per run, by the number of new messages, in one many-partition
    /// apply; runs start at most every 100 ms, so a busy room costs its members' records at
    /// most ten writes a second. The unread counts are declared counters (``RChat/application``,
    /// ``ObjectCounter``): each raise is written beside the record, which is neither read nor
    /// rewritten, and makes no change event. Only
    /// records that list the conversation and belong to a member are counted: a record that
    /// lists a conversation its owner is not a member of learns nothing from it.
    public static let unreadCounts = Trigger(
        name: "rchat.unread-counts", collections: [ChatMessage.collection], operations: [.insert], gathering: .milliseconds(100),
        handlingRuns: { events, context in
        var newMessages: [String: Int64] = [:]
        for event in events {
            guard let partition = event.partition, partition.kind == .conversation else { continue }
            newMessages[partition.value, default: 0] += 1
        }
        var operations: [Partition: [SyncOperation]] = [:]
        let conversations = Array(newMessages.keys)
        let memberships = try await context.objects(Membership.self, ids: conversations)
        // Only where the members' records are, every room's in one search: the increments read
        // each record once, after its partition is locked.
        let listings = try await context.keys(
            of: User.collection, whereArray: "conversations", field: "id", in: conversations.map(JSONValue.string))
        for (conversation, count) in newMessages.sorted(by: { $0.key < $1.key }) {
            let membership = memberships[conversation]
            let path = try RChatPaths.unreadCount(conversation)
            for member in listings[.string(conversation)] ?? [] where membership?.contains(member.key.id) ?? true {
                operations[member.partition, default: []].append(.increment(member.key, path: path, by: .int(count)))
            }
        }
        guard !operations.isEmpty else { return }
        try await context.apply(operations)
    })

    /// The author of the unread-count trigger's writes.
    static let unreadCountsAuthor = "trigger:" + unreadCounts.name

    /// A user's first session sets them On-Line, the last one closing Off-Line (with
    /// `lastSeenAt`); a Hidden user stays Hidden. The Chatster follows through `userChanged`.
    ///
    /// It works on the record's body as stored: decoding and encoding the whole record (which
    /// lists every member of every room of the user's, 0.4 MB for a room of 5,000) three
    /// times over took a tenth of a second a session.
    public static let presence = Trigger(name: "rchat.presence", kinds: [.session]) { event, context in
        guard let userID = event.userID else { return }
        let fields: [(String, JSONValue)]
        switch event.operation {
        case .opened:
            fields = [("presence", .string(Presence.onLine.rawValue))]
        case .closed:
            fields = [("presence", .string(Presence.offLine.rawValue)), ("lastSeenAt", .string(JSONValue.iso8601(event.created)))]
        default:
            return
        }
        let (key, partition) = (RChat.userKey(userID), RChat.userPartition(userID))
        // Read under the lock its write takes: the record (which lists every member of every
        // room of the user's) is read and parsed once, not once here and again by the write.
        guard let body = try await context.bodyForUpdate(of: key, in: partition), body["presence"] != .string(Presence.hidden.rawValue) else {
            return
        }
        // Only what differs is written.
        let operations = fields.filter { body[$0.0] != $0.1 }.map { SyncOperation.set(key, path: .field($0.0), value: $0.1) }
        guard !operations.isEmpty else { return }
        try await context.apply(operations, in: partition)
    }

    /// Whether an update changes which conversations a User record lists, or their pending
    /// members: what ``MembershipKeeper`` reconciles.
    static func concernsMembers(_ event: ChangeEvent) -> Bool {
        guard (event.changedFields + event.removedFields).contains("conversations") else { return false }
        return MembershipKeeper.conversationIDs(of: event.before) != MembershipKeeper.conversationIDs(of: event.after)
            || MembershipKeeper.pendingMembers(of: event.before) != MembershipKeeper.pendingMembers(of: event.after)
    }

    /// A User body decoded with its conversations left out.
    static func withoutConversations(_ body: [String: JSONValue]?, of event: ChangeEvent) throws -> User? {
        guard var body, let key = event.key else { return nil }
        body["conversations"] = .array([])
        return try User.decode(body, of: key)
    }

    /// Whether a User change touches what the Chatster copies, or the conversations it lists,
    /// or their pending members. Also decides which User changes are recorded as events at
    /// all, so it is cheap and passes over unread counts.
    @Sendable static func concernsChatsterOrMembers(_ event: ChangeEvent) -> Bool {
        if event.operation == .insert || event.operation == .delete || event.operation == .import { return true }
        // The unread-count trigger only raises counts: its writes (one per member and message
        // run, each record listing every member of its rooms) need no look at the members.
        if event.author == unreadCountsAuthor { return false }
        // The membership trigger's own changes of User records (an invitee's copy, the
        // inviter's marks, a forged listing taken out) are what its reconciling leaves in line:
        // handed back to it, each would be read and decoded to find nothing to do (a room of
        // 5,000 made 5,000 such events of 0.4 MB records, read for nearly three minutes). An
        // invitee whose record did not exist yet is brought in when it is made (``MembershipKeeper/welcome(_:_:)``).
        // A run dead-lettered after some of its copies committed leaves them without a
        // membership, granting nothing, until its retry.
        if event.author == userChangedAuthor && event.operation == .update { return false }
        let fields = event.changedFields + event.removedFields
        if fields.contains(where: { $0 == "userName" || $0 == "presence" || $0 == "lastSeenAt" || $0.hasPrefix("userPreferences") }) {
            return true
        }
        return concernsMembers(event)
    }
}
