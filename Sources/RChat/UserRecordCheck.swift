import PartitionSync

/// What a user may write into their own User record: the fields of the model, each of its
/// kind and within ``RChatLimits``. Only what the change touches is checked, so records the
/// server wrote (invitation copies, presence) never block their owner's next write.
///
/// The rules, as docs/TRIGGERS.md states them:
/// - no field outside the model (`_id`, `partition`, `userName`, `userPreferences`,
///   `lastSeenAt`, `conversations`, `presence`); `userName` never changes;
/// - `presence` is one of the ``Presence`` values; `lastSeenAt` a string or null;
/// - `userPreferences` holds `displayName` (a string of at most
///   ``RChatLimits/maximumDisplayNameLength`` characters, with no `@` unless it is the user's
///   own userName, so nobody can pass for another user's email) and `avatarImage` (at most
///   ``RChatLimits/maximumAvatarBytes``);
/// - each new or changed conversation entry has exactly the model's fields: an `id` that
///   ``RChatLimits/isConversationID(_:)`` accepts, a `displayName`, a non-negative
///   `unreadCount` and at most ``RChatLimits/maximumMembers`` `members`, each a `userName`
///   and a ``MembershipStatus``; ids are unique, and a write may not raise the number of
///   conversations past ``RChatLimits/maximumConversations``.
struct UserRecordCheck {
    static let fields: Set<String> = ["_id", "partition", "userName", "userPreferences", "lastSeenAt", "conversations", "presence"]
    static let conversationFields: Set<String> = ["id", "displayName", "unreadCount", "members"]
    static let memberFields: Set<String> = ["userName", "membershipStatus"]

    let limits: RChatLimits

    func check(before: [String: JSONValue], after: [String: JSONValue]) throws(SyncError) {
        if let unknown = after.keys.sorted().first(where: { !Self.fields.contains($0) && before[$0] != after[$0] }) {
            throw refusal("a User record has no field '\(unknown)'")
        }
        if before["userName"] != after["userName"] {
            throw refusal("a User record's userName cannot be changed")
        }
        if before["presence"] != after["presence"], let presence = after["presence"] {
            guard let value = presence.stringValue, Presence(rawValue: value) != nil else {
                throw refusal("presence is one of \(Self.quoted([Presence.onLine, .offLine, .hidden].map(\.rawValue)))")
            }
        }
        if before["lastSeenAt"] != after["lastSeenAt"], let seen = after["lastSeenAt"], seen.stringValue == nil, !seen.isNull {
            throw refusal("lastSeenAt is a date string or null")
        }
        if before["userPreferences"] != after["userPreferences"], let preferences = after["userPreferences"], !preferences.isNull {
            try check(preferences: preferences, userName: after["userName"]?.stringValue)
        }
        if before["conversations"] != after["conversations"] {
            try check(conversations: after["conversations"], before: before["conversations"])
        }
    }

    private func check(preferences: JSONValue, userName: String?) throws(SyncError) {
        guard let fields = preferences.objectValue else { throw refusal("userPreferences is an object") }
        if let unknown = fields.keys.sorted().first(where: { $0 != "displayName" && $0 != "avatarImage" }) {
            throw refusal("userPreferences has no field '\(unknown)'")
        }
        if let name = fields["displayName"], !name.isNull {
            guard let text = name.stringValue, text.count <= limits.maximumDisplayNameLength else {
                throw refusal("a displayName is a string of at most \(limits.maximumDisplayNameLength) characters")
            }
            if text.contains("@"), text != userName {
                throw refusal("a displayName may not contain '@' unless it is your own userName")
            }
        }
        if let avatar = fields["avatarImage"], !avatar.isNull {
            guard avatar.objectValue != nil else { throw refusal("avatarImage is a Photo object") }
            let size = avatar.jsonBytes.count
            guard size <= limits.maximumAvatarBytes else {
                throw SyncError(.payloadTooLarge, "avatarImage is \(size) bytes; the limit is \(limits.maximumAvatarBytes) (send a thumbnail)")
            }
        }
    }

    private func check(conversations: JSONValue?, before: JSONValue?) throws(SyncError) {
        guard let entries = conversations?.arrayValue else { throw refusal("conversations is an array") }
        let earlier = before?.arrayValue ?? []
        if entries.count > limits.maximumConversations, entries.count > earlier.count {
            throw refusal("a User record lists at most \(limits.maximumConversations) conversations")
        }
        var previous: [String: JSONValue] = [:]
        for entry in earlier {
            if let id = entry["id"]?.stringValue, previous[id] == nil { previous[id] = entry }
        }
        var ids: Set<String> = []
        for entry in entries {
            guard let fields = entry.objectValue, let id = fields["id"]?.stringValue else {
                throw refusal("a conversation is an object with a string id")
            }
            guard ids.insert(id).inserted else { throw refusal("conversation \(Self.quoted([id])) is listed twice") }
            if previous[id] == entry { continue }
            try check(conversation: fields, id: id)
        }
    }

    private func check(conversation fields: [String: JSONValue], id: String) throws(SyncError) {
        guard limits.isConversationID(id) else {
            throw refusal("a conversation id has 1 to \(limits.maximumConversationIDLength) characters of A-Z a-z 0-9 _ -")
        }
        if let unknown = fields.keys.sorted().first(where: { !Self.conversationFields.contains($0) }) {
            throw refusal("a conversation has no field '\(unknown)'")
        }
        guard let name = fields["displayName"]?.stringValue, name.count <= limits.maximumDisplayNameLength else {
            throw refusal("a conversation's displayName is a string of at most \(limits.maximumDisplayNameLength) characters")
        }
        if let count = fields["unreadCount"] {
            guard let value = count.intValue, value >= 0 else { throw refusal("unreadCount is a non-negative integer") }
        }
        guard let members = fields["members"]?.arrayValue, members.count <= limits.maximumMembers else {
            throw refusal("a conversation's members is an array of at most \(limits.maximumMembers) members")
        }
        let statuses = [MembershipStatus.pending, .active].map(\.rawValue)
        for member in members {
            guard let entry = member.objectValue, entry.keys.allSatisfy(Self.memberFields.contains),
                let name = entry["userName"]?.stringValue, !name.isEmpty, name.count <= limits.maximumUserNameLength,
                let status = entry["membershipStatus"]?.stringValue, statuses.contains(status)
            else {
                throw refusal(
                    "a member is {userName, membershipStatus}: a userName of 1 to \(limits.maximumUserNameLength) characters and one of \(Self.quoted(statuses))")
            }
        }
    }

    private func refusal(_ message: String) -> SyncError {
        SyncError(.validationFailed, message)
    }

    private static func quoted(_ values: [String]) -> String {
        values.map { "'\($0)'" }.joined(separator: ", ")
    }
}
