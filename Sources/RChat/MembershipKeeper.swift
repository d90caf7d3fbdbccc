import Logging
import SyncProtocol
import SyncStorage
import SyncTriggers

/// The membership trigger's work for one User change: it brings the conversations' membership
/// records (``ConversationMembership``) in line with what the user's record lists.
///
/// - A conversation listed while no record exists is created, with the user as creator and
///   only member (the first lister in commit order wins).
/// - A conversation listed by someone who is not a member is taken out of their record: a
///   listing grants nothing.
/// - Pending members in a member's copy are invitations: each invitee that exists gets a copy
///   of a fixed shape and size (id, displayName, unreadCount, and the members that are users)
///   and becomes a member, and is marked active in the inviter's copy, unless the copy would
///   push the invitee's record over ``RChatLimits/invitationBudgetBytes`` (then they stay
///   pending).
/// - A conversation no longer listed (left, or the account deleted) ends the membership.
///
/// Hostile input is passed over, never thrown: a conversation id that is not
/// ``RChatLimits/isConversationID(_:)`` is ignored, so no record can stall the trigger.
struct MembershipKeeper {
    let limits: RChatLimits
    let context: TriggerContext

    /// Applies the effects of a change of `userID`'s record from `before` to `after`.
    func reconcile(_ userID: String, before: [String: JSONValue]?, after: [String: JSONValue]) async throws {
        let listed = Self.conversations(of: after)
        let listedIDs = Set(listed.compactMap { $0["id"]?.stringValue })
        let left = Self.conversationIDs(of: before).subtracting(listedIDs)
        try await leave(userID, conversations: left)

        let me = after["userName"]?.stringValue
        var operations: [Partition: [SyncOperation]] = [:]
        var seen: Set<String> = []
        for entry in listed {
            guard let id = entry["id"]?.stringValue, limits.isConversationID(id), seen.insert(id).inserted else { continue }
            let stored = try await membership(id)
            var membership = stored ?? ConversationMembership(conversation: id, creator: userID, members: [userID])
            guard membership.contains(userID) else {
                // Listed without membership: a forged or stale entry, taken out.
                operations[RChat.userPartition(userID), default: []].append(
                    .arrayRemove(RChat.userKey(userID), path: RChatPaths.conversations, match: ["id": .string(id)]))
                continue
            }
            try await invite(from: userID, userName: me, entry: entry, into: &membership, operations: &operations)
            if membership != stored {
                operations[ConversationMembership.partition(id), default: []].append(
                    .put(ConversationMembership.key(id), body: membership.body))
            }
        }
        guard !operations.isEmpty else { return }
        try await context.apply(operations)
    }

    /// Ends `userID`'s membership of each of `conversations`.
    func leave(_ userID: String, conversations: Set<String>) async throws {
        var operations: [Partition: [SyncOperation]] = [:]
        for id in conversations.sorted() where limits.isConversationID(id) {
            guard var membership = try await membership(id), membership.contains(userID) else { continue }
            membership.members.removeAll { $0 == userID }
            operations[ConversationMembership.partition(id), default: []].append(.put(ConversationMembership.key(id), body: membership.body))
        }
        guard !operations.isEmpty else { return }
        try await context.apply(operations)
    }

    private func membership(_ id: String) async throws -> ConversationMembership? {
        ConversationMembership(conversation: id, body: try await context.body(of: ConversationMembership.key(id)))
    }

    /// Brings the pending members of `entry` (the inviter's copy) that are users into the
    /// conversation.
    private func invite(
        from inviter: String, userName me: String?, entry: [String: JSONValue], into membership: inout ConversationMembership,
        operations: inout [Partition: [SyncOperation]]
    ) async throws {
        let id = membership.conversation
        let names = Self.pendingNames(in: entry, except: me)
        guard !names.isEmpty else { return }
        let found = try await context.find(User.collection, where: "userName", in: names)
        var invitees: [String: (partition: Partition, object: SyncObject)] = [:]
        for user in found {
            guard let name = user.object.body?["userName"]?.stringValue, names.contains(name), invitees[name] == nil else { continue }
            invitees[name] = user
        }
        guard !invitees.isEmpty else { return }
        let copy = invitationCopy(of: entry, activating: Set(invitees.keys))
        let copySize = JSONValue.object(copy).jsonBytes.count
        for name in invitees.keys.sorted() {
            let invitee = invitees[name]!
            let inviteeID = invitee.object.key.id
            let body = invitee.object.body ?? [:]
            let theirs = Self.conversations(of: body)
            if !theirs.contains(where: { $0["id"] == .string(id) }) {
                let size = JSONValue.object(body).jsonBytes.count
                guard theirs.count < limits.maximumConversations, size + copySize <= limits.invitationBudgetBytes else {
                    context.logger.notice("invitation not delivered: the invitee's record is full", metadata: ["conversation": "\(id)"])
                    continue
                }
                operations[invitee.partition, default: []].append(
                    .arrayAppend(invitee.object.key, path: RChatPaths.conversations, value: .object(copy)))
            }
            if !membership.contains(inviteeID) { membership.members.append(inviteeID) }
            operations[RChat.userPartition(inviter), default: []].append(
                .set(RChat.userKey(inviter), path: RChatPaths.membershipStatus(id, name), value: .string(MembershipStatus.active.rawValue)))
        }
    }

    /// The conversation as an invitee receives it: only the fields of the model, the display
    /// name cut to its limit, and the members that are users (the inviter's active members
    /// and those invited now), each with its name and status alone.
    private func invitationCopy(of entry: [String: JSONValue], activating: Set<String>) -> [String: JSONValue] {
        let active = JSONValue.string(MembershipStatus.active.rawValue)
        var members: [JSONValue] = []
        for member in entry["members"]?.arrayValue ?? [] {
            guard let name = member["userName"]?.stringValue, name.count <= limits.maximumUserNameLength else { continue }
            if activating.contains(name) || member["membershipStatus"] == active {
                members.append(["userName": .string(name), "membershipStatus": active])
            }
            if members.count >= limits.maximumMembers { break }
        }
        return [
            "id": entry["id"] ?? .null,
            "displayName": .string(String((entry["displayName"]?.stringValue ?? "").prefix(limits.maximumDisplayNameLength))),
            "unreadCount": 0,
            "members": .array(members),
        ]
    }

    static func conversations(of user: [String: JSONValue]?) -> [[String: JSONValue]] {
        (user?["conversations"]?.arrayValue ?? []).compactMap(\.objectValue)
    }

    /// The ids of the conversations a User body lists.
    static func conversationIDs(of user: [String: JSONValue]?) -> Set<String> {
        Set(conversations(of: user).compactMap { $0["id"]?.stringValue })
    }

    /// The (conversation, userName) pairs marked pending in a User body.
    static func pendingMembers(of user: [String: JSONValue]?) -> Set<[String]> {
        var pairs: Set<[String]> = []
        for conversation in conversations(of: user) {
            guard let id = conversation["id"]?.stringValue else { continue }
            for name in pendingNames(in: conversation, except: nil) { pairs.insert([id, name]) }
        }
        return pairs
    }

    /// The userNames marked pending in one conversation entry, but `me`.
    static func pendingNames(in conversation: [String: JSONValue], except me: String?) -> [String] {
        let pending = JSONValue.string(MembershipStatus.pending.rawValue)
        return (conversation["members"]?.arrayValue ?? []).compactMap { member in
            guard member["membershipStatus"] == pending, let name = member["userName"]?.stringValue, name != me else { return nil }
            return name
        }
    }
}
