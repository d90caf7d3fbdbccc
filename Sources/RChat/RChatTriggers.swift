import Foundation
import SyncProtocol
import SyncStorage
import SyncTriggers

/// RChat's triggers: they keep the duplicated data of the RChat model consistent, as the
/// article's Realm triggers did.
public enum RChatTriggers {
    public static var all: [Trigger] { [userRegistered, userDeleted, userChanged, unreadCounts, presence] }

    static func userKey(_ id: String) -> ObjectKey { try! ObjectKey(collection: User.collection, id: id) }
    static func chatsterKey(_ id: String) -> ObjectKey { try! ObjectKey(collection: Chatster.collection, id: id) }

    /// A new account gets its User record and its Chatster.
    public static let userRegistered = Trigger(name: "rchat.user-registered", kinds: [.user], operations: [.registered]) { event, context in
        guard let userID = event.userID, let email = event.after?["email"]?.stringValue else { return }
        let user = User(_id: userID, userName: email, userPreferences: UserPreferences(displayName: email))
        guard var body = try JSONValue(encoding: user).objectValue else { return }
        // The article's User starts with lastSeenAt null (JSONEncoder would leave it out).
        body["lastSeenAt"] = .null
        try await context.apply([
            RChat.userPartition(userID): [.put(userKey(userID), body: body)],
            RChat.allUsers: [.put(chatsterKey(userID), body: chatster(from: body))],
        ])
    }

    /// A deleted account takes its User record and Chatster with it.
    public static let userDeleted = Trigger(name: "rchat.user-deleted", kinds: [.user], operations: [.deleted]) { event, context in
        guard let userID = event.userID else { return }
        try await context.apply([
            RChat.userPartition(userID): [.delete(userKey(userID))],
            RChat.allUsers: [.delete(chatsterKey(userID))],
        ])
    }

    /// Keeps the Chatster equal to the User record, and brings members added to a conversation
    /// into it: the conversation is added to each pending member's User record (once) and the
    /// member is marked active.
    /// Changes of other fields (such as unread counts) are passed over without a transaction.
    public static let userChanged = Trigger(name: "rchat.user-changed", collections: [User.collection], where: concernsChatsterOrMembers) { event, context in
        guard let userID = event.key?.id else { return }
        guard let user = event.after else {
            try await context.apply([.delete(chatsterKey(userID))], in: RChat.allUsers)
            return
        }
        try await context.apply([.put(chatsterKey(userID), body: chatster(from: user))], in: RChat.allUsers)
        try await activatePendingMembers(of: userID, user, context)
    }

    /// Each new message raises the unread count of its conversation in every member's User
    /// record. The messages of a run are counted per conversation first, so each member's
    /// count is raised once per run, by the number of new messages, with a constant number of
    /// statements however many members and messages there are; runs start at most every
    /// 100 ms, so a busy room costs its members' records at most ten writes a second.
    public static let unreadCounts = Trigger(
        name: "rchat.unread-counts", collections: [ChatMessage.collection], operations: [.insert], gathering: .milliseconds(100),
        handlingRuns: { events, context in
        var newMessages: [String: Int64] = [:]
        for event in events {
            guard let partition = event.partition, partition.key == "conversation" else { continue }
            newMessages[partition.value, default: 0] += 1
        }
        var operations: [Partition: [SyncOperation]] = [:]
        for (conversation, count) in newMessages.sorted(by: { $0.key < $1.key }) {
            // Only where the members' records are: the increments read each record once, after
            // its partition is locked.
            let members = try await context.keys(of: User.collection, whereArray: "conversations", field: "id", is: .string(conversation))
            let path = try Path(parsing: "conversations[id=\(conversation)].unreadCount")
            for member in members {
                operations[member.partition, default: []].append(.increment(member.key, path: path, by: .int(count)))
            }
        }
        guard !operations.isEmpty else { return }
        try await context.apply(operations)
    })

    /// A user's first session sets them On-Line, the last one closing Off-Line (with
    /// `lastSeenAt`); a Hidden user stays Hidden. The Chatster follows through `userChanged`.
    public static let presence = Trigger(name: "rchat.presence", kinds: [.session]) { event, context in
        guard let userID = event.userID else { return }
        let key = userKey(userID)
        guard let user = try await context.body(of: key) else { return }
        if user["presence"] == .string(Presence.hidden.rawValue) { return }
        switch event.operation {
        case .opened:
            try await context.apply([.set(key, path: try Path(parsing: "presence"), value: .string(Presence.onLine.rawValue))], in: RChat.userPartition(userID))
        case .closed:
            try await context.apply([
                .set(key, path: try Path(parsing: "presence"), value: .string(Presence.offLine.rawValue)),
                .set(key, path: try Path(parsing: "lastSeenAt"), value: .string(JSONValue.iso8601(event.created))),
            ], in: RChat.userPartition(userID))
        default:
            break
        }
    }

    /// Whether a User change touches what the Chatster copies, or leaves pending members.
    @Sendable static func concernsChatsterOrMembers(_ event: ChangeEvent) -> Bool {
        if event.operation == .insert || event.operation == .delete { return true }
        let fields = event.changedFields + event.removedFields
        if fields.contains(where: { $0 == "userName" || $0 == "presence" || $0 == "lastSeenAt" || $0.hasPrefix("userPreferences") }) {
            return true
        }
        guard fields.contains("conversations") else { return false }
        let pending = JSONValue.string(MembershipStatus.pending.rawValue)
        return event.after?["conversations"]?.arrayValue?.contains { conversation in
            conversation["members"]?.arrayValue?.contains { $0["membershipStatus"] == pending } ?? false
        } ?? false
    }

    /// The Chatster body of a User body.
    static func chatster(from user: [String: JSONValue]) -> [String: JSONValue] {
        [
            "userName": user["userName"] ?? .null,
            "displayName": user["userPreferences"]?["displayName"] ?? .null,
            "avatarImage": user["userPreferences"]?["avatarImage"] ?? .null,
            "presence": user["presence"] ?? .string(Presence.offLine.rawValue),
            "lastSeenAt": user["lastSeenAt"] ?? .null,
        ]
    }

    /// For each conversation of `user` with pending members: gives each such member (that
    /// exists) the conversation, and marks them active in both records. Idempotent.
    ///
    /// Every copy handed out already shows all the members activated here as active, so the
    /// members' own User changes find nothing left to do: a room of N members costs O(N)
    /// operations, not one pass over N members for each of them.
    static func activatePendingMembers(of userID: String, _ user: [String: JSONValue], _ context: TriggerContext) async throws {
        let me = user["userName"]?.stringValue
        let pending = JSONValue.string(MembershipStatus.pending.rawValue)
        let conversations = (user["conversations"]?.arrayValue ?? []).compactMap(\.objectValue)
        func pendingNames(_ conversation: [String: JSONValue]) -> [String] {
            (conversation["members"]?.arrayValue ?? []).compactMap { member in
                guard member["membershipStatus"] == pending, let name = member["userName"]?.stringValue, name != me else { return nil }
                return name
            }
        }
        let names = Set(conversations.flatMap(pendingNames))
        guard !names.isEmpty else { return }
        let found = try await context.find(User.collection, where: "userName", in: Array(names))
        let byName = Dictionary(found.compactMap { entry in entry.object.body?["userName"]?.stringValue.map { ($0, entry) } }, uniquingKeysWith: { first, _ in first })
        var operations: [Partition: [SyncOperation]] = [:]
        let own = RChat.userPartition(userID)
        for conversation in conversations {
            guard let id = conversation["id"]?.stringValue else { continue }
            let activated = Set(pendingNames(conversation).filter { byName[$0] != nil })
            guard !activated.isEmpty else { continue }
            var copy = conversation
            copy["unreadCount"] = 0
            copy["members"] = .array((conversation["members"]?.arrayValue ?? []).map { entry in
                guard let name = entry["userName"]?.stringValue, activated.contains(name), var fields = entry.objectValue else { return entry }
                fields["membershipStatus"] = .string(MembershipStatus.active.rawValue)
                return .object(fields)
            })
            for name in activated.sorted() {
                let member = byName[name]!
                let memberConversations = member.object.body?["conversations"]?.arrayValue ?? []
                if !memberConversations.contains(where: { $0["id"] == .string(id) }) {
                    operations[member.partition, default: []].append(.arrayAppend(member.object.key, path: try Path(parsing: "conversations"), value: .object(copy)))
                }
                let status = try Path(parsing: "conversations[id=\(id)].members[userName=\(name)].membershipStatus")
                operations[own, default: []].append(.set(userKey(userID), path: status, value: .string(MembershipStatus.active.rawValue)))
            }
        }
        try await context.apply(operations)
    }
}
