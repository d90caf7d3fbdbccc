import PartitionSync

/// The membership trigger's work for one User change: it brings the conversations' membership
/// records (``Membership``) in line with what the user's record lists.
///
/// - A conversation listed while no record exists is created, with the user as creator and
///   only member (the first lister in commit order wins).
/// - A conversation listed by someone who is not a member is taken out of their record: a
///   listing grants nothing.
/// - Pending members in a member's copy are invitations: each invitee that exists gets a copy
///   of a fixed shape and size (a ``Conversation`` of id, display name, unread count 0, and the
///   members that are users) and becomes a member, and is marked active in the inviter's copy,
///   unless the copy would push the invitee's record over ``RChatLimits/invitationBudgetBytes``
///   (then they stay pending). An invitee without a User record yet (an account whose
///   registration has still to make it) waits in the membership record
///   (``Membership/invited``) until the record is made (``welcome(_:_:)``).
/// - A conversation no longer listed (left, or the account deleted) ends the membership.
///
/// Hostile input is passed over, never thrown: a conversation id that is not
/// ``RChatLimits/isConversationID(_:)`` is ignored, so no record can stall the trigger.
struct MembershipKeeper {
    let limits: RChatLimits
    let context: TriggerContext

    /// Applies the effects of a change of `userID`'s record from `before` to `after`.
    func reconcile(_ userID: String, before: User?, after: User) async throws {
        let left = Self.conversationIDs(of: before).subtracting(after.conversations.map(\.id))
        try await leave(userID, conversations: left)

        // The invitees' copies, delivered first and in parts (a room of 5,000 is 5,000 copies
        // of its 0.4 MB member list: 2 GB, a minute of writing in one transaction); the
        // memberships and the inviter's marks then commit with the trigger's progress. A handler
        // run again after a part committed skips the invitees already holding their copy.
        var copies: [Partition: [SyncOperation]] = [:]
        var operations: [Partition: [SyncOperation]] = [:]
        var seen: Set<String> = []
        let listed = after.conversations.filter { limits.isConversationID($0.id) && seen.insert($0.id).inserted }
        let stored = try await context.objects(Membership.self, ids: listed.map(\.id))
        for entry in listed {
            var membership = stored[entry.id] ?? Membership(conversation: entry.id, creator: userID, members: [userID])
            guard membership.contains(userID) else {
                // Listed without membership: a forged or stale entry, taken out.
                operations[RChat.userPartition(userID), default: []].append(
                    .arrayRemove(RChat.userKey(userID), path: RChatPaths.conversations, match: ["id": .string(entry.id)]))
                continue
            }
            try await invite(from: after, entry: entry, into: &membership, copies: &copies, operations: &operations)
            if membership != stored[entry.id] {
                operations[Membership.partition(entry.id), default: []].append(try membership.putOperation())
            }
        }
        if !copies.isEmpty { try await context.applyInParts(copies) }
        guard !operations.isEmpty else { return }
        try await Self.apply(operations, in: context)
    }

    /// The most operations on one partition in one apply: the inviter's copy marks each
    /// invitee active with an operation of its own, and the engine takes at most
    /// `Limits.maximumOperations` (1,000 by default) per partition in one apply, so a room
    /// created with more invitees is applied in parts, in the trigger's one transaction.
    static let operationsPerApply = 500

    /// Applies `operations` (in each partition's order) in parts of at most ``operationsPerApply``
    /// per partition: one many-partition apply for the first part of each, then the rest.
    static func apply(_ operations: [Partition: [SyncOperation]], in context: TriggerContext) async throws {
        var first: [Partition: [SyncOperation]] = [:]
        var rest: [(partition: Partition, operations: ArraySlice<SyncOperation>)] = []
        for (partition, list) in operations {
            first[partition] = Array(list.prefix(operationsPerApply))
            for start in stride(from: operationsPerApply, to: list.count, by: operationsPerApply) {
                rest.append((partition, list[start..<min(start + operationsPerApply, list.count)]))
            }
        }
        try await context.apply(first)
        for part in rest { _ = try await context.apply(Array(part.operations), in: part.partition) }
    }

    /// A User record just made (or imported): the invitations that waited for it
    /// (``Membership/invited``) are delivered as the inviters' copies still ask, and taken out
    /// of the membership records.
    ///
    /// The membership trigger does not read back its own writes (an inviter's marks, an
    /// invitee's copy): it is this, not reading the inviter's record again, that brings in an
    /// invitee listed before their record existed. Events are handled in commit order, so a
    /// record committed before an invitation is found by the invitation's search, and one
    /// committed after it finds the invitation here.
    func welcome(_ userID: String, _ user: User) async throws {
        let name = user.userName
        let waiting = try await context.keys(of: Membership.collection, whereArray: "invited", field: "userName", is: .string(name))
        guard !waiting.isEmpty else { return }
        let stored = try await context.objects(Membership.self, ids: waiting.map(\.key.id))
        var copies: [Partition: [SyncOperation]] = [:]
        var operations: [Partition: [SyncOperation]] = [:]
        for (id, var membership) in stored.sorted(by: { $0.key < $1.key }) {
            let inviters = membership.invited.filter { $0.userName == name }.map(\.inviter)
            membership.invited.removeAll { $0.userName == name }
            for inviterID in inviters where membership.contains(inviterID) && !membership.contains(userID) {
                // The inviter's copy as it is now: an invitation they took back (the name no longer
                // pending in it) is not delivered.
                guard let inviter = try await context.object(User.self, id: inviterID),
                      let entry = inviter.conversations.first(where: { $0.id == id })
                else { continue }
                try await invite(from: inviter, entry: entry, into: &membership, copies: &copies, operations: &operations, only: [name])
            }
            operations[Membership.partition(id), default: []].append(try membership.putOperation())
        }
        if !copies.isEmpty { try await context.applyInParts(copies) }
        try await Self.apply(operations, in: context)
    }

    /// An imported User record (docs/MIGRATING.md): every conversation it lists is a
    /// membership it had in the app it came from, which the operator vouched for by importing
    /// it, so the user becomes a member of each (the first one imported its creator). Nothing
    /// is taken out of the record, and no invitation is delivered: each member's own record
    /// was exported with its copy.
    func adopt(_ userID: String, _ user: User) async throws {
        var seen: Set<String> = []
        let listed = user.conversations.map(\.id).filter { limits.isConversationID($0) && seen.insert($0).inserted }
        let stored = try await context.objects(Membership.self, ids: listed)
        var operations: [Partition: [SyncOperation]] = [:]
        for id in listed {
            var membership = stored[id] ?? Membership(conversation: id, creator: userID, members: [])
            guard !membership.contains(userID) else { continue }
            membership.members.append(userID)
            operations[Membership.partition(id), default: []].append(try membership.putOperation())
        }
        guard !operations.isEmpty else { return }
        try await context.apply(operations)
    }

    /// Ends `userID`'s membership of each of `conversations`.
    func leave(_ userID: String, conversations: Set<String>) async throws {
        for id in conversations.sorted() where limits.isConversationID(id) {
            try await context.update(Membership.self, id: id, in: Membership.partition(id)) { membership in
                membership.members.removeAll { $0 == userID }
            }
        }
    }

    /// Brings the pending members of `entry` (the inviter's copy) that are users into the
    /// conversation: each invitee's copy into `copies`, the inviter's marks into `operations`.
    ///
    /// Who is who comes from the user-name index alone, and who has the conversation already
    /// from the conversations' index: only the records of invitees still to get their copy are
    /// read. Every member's record lists the whole room (and each other room of theirs), so
    /// reading all of them to invite one more member into a room of 2,000 parsed 2,000
    /// records of ~170 kB: gigabytes.
    ///
    /// A pending name no User record has waits in `membership` (``Membership/invited``);
    /// `only`, when given, limits the invitation to those names.
    private func invite(
        from inviter: User, entry: Conversation, into membership: inout Membership,
        copies: inout [Partition: [SyncOperation]], operations: inout [Partition: [SyncOperation]], only: Set<String>? = nil
    ) async throws {
        let id = entry.id
        var names = Set(Self.pendingNames(in: entry, except: inviter.userName))
        if let only { names.formIntersection(only) }
        guard !names.isEmpty else { return }
        // The copy's members are the conversation's members that are users, never names the
        // inviter merely marked active: one search finds the invitees and those users (the
        // first record by key, for a name two records give).
        let listed = names.union(entry.members.lazy.filter { $0.membershipStatus == .active }.map(\.userName))
        var users: [String: (partition: Partition, id: String)] = [:]
        for (name, found) in try await context.keys(of: User.collection, where: "userName", in: Array(listed)) {
            if let first = found.min(by: { $0.key < $1.key }) { users[name] = (first.partition, first.key.id) }
        }
        for name in names.sorted() where users[name] == nil {
            membership.awaitRecord(of: name, invitedBy: inviter._id, limit: limits.maximumMembers)
        }
        let invitees = users.filter { names.contains($0.key) }
        guard !invitees.isEmpty else { return }
        membership.invited.removeAll { invitees[$0.userName] != nil }
        let current = membership
        let members = Set(users.filter { current.contains($0.value.id) }.keys).union(invitees.keys)
        let copy = try JSONValue(encoding: invitationCopy(of: entry, members: members))
        let copySize = copy.jsonBytes.count
        let having = Set(try await context.keys(of: User.collection, whereArray: "conversations", field: "id", is: .string(id)).map(\.key.id))
        let records = try await context.objects(User.self, ids: invitees.values.map(\.id).filter { !having.contains($0) }.sorted())
        for name in invitees.keys.sorted() {
            let (partition, userID) = invitees[name]!
            if !having.contains(userID) {
                guard let invitee = records[userID] else { continue }
                let size = try JSONValue(encoding: invitee).jsonBytes.count
                guard invitee.conversations.count < limits.maximumConversations, size + copySize <= limits.invitationBudgetBytes else {
                    context.logger.notice("invitation not delivered: the invitee's record is full", metadata: ["conversation": "\(id)"])
                    continue
                }
                copies[partition, default: []].append(.arrayAppend(RChat.userKey(userID), path: RChatPaths.conversations, value: copy))
            }
            if !membership.contains(userID) { membership.members.append(userID) }
            operations[RChat.userPartition(inviter._id), default: []].append(
                .set(RChat.userKey(inviter._id), path: try RChatPaths.membershipStatus(id, name), value: .string(MembershipStatus.active.rawValue)))
        }
    }

    /// The conversation as an invitee receives it: a ``Conversation`` (nothing the inviter
    /// added to their copy beyond the model), the display name cut to its limit, an unread
    /// count of 0, and, in the inviter's order, the listed names in `members` (users who are
    /// members of the conversation, and those invited now), each active.
    private func invitationCopy(of entry: Conversation, members names: Set<String>) -> Conversation {
        var members: [Member] = []
        var seen: Set<String> = []
        for member in entry.members where names.contains(member.userName) && seen.insert(member.userName).inserted {
            members.append(Member(userName: member.userName, membershipStatus: .active))
            if members.count >= limits.maximumMembers { break }
        }
        return Conversation(id: entry.id, displayName: String(entry.displayName.prefix(limits.maximumDisplayNameLength)), members: members)
    }

    /// The userNames marked pending in one conversation entry, but `me`.
    static func pendingNames(in conversation: Conversation, except me: String?) -> [String] {
        conversation.members.filter { $0.membershipStatus == .pending && $0.userName != me }.map(\.userName)
    }

    static func conversationIDs(of user: User?) -> Set<String> {
        Set(user?.conversations.map(\.id) ?? [])
    }

    // MARK: On raw bodies, for the event filter (it runs for every User change, unread counts too)

    private static func conversations(of user: [String: JSONValue]?) -> [[String: JSONValue]] {
        (user?["conversations"]?.arrayValue ?? []).compactMap(\.objectValue)
    }

    /// The ids of the conversations a User body lists.
    static func conversationIDs(of user: [String: JSONValue]?) -> Set<String> {
        Set(conversations(of: user).compactMap { $0["id"]?.stringValue })
    }

    /// The (conversation, userName) pairs marked pending in a User body.
    static func pendingMembers(of user: [String: JSONValue]?) -> Set<[String]> {
        let pending = JSONValue.string(MembershipStatus.pending.rawValue)
        var pairs: Set<[String]> = []
        for conversation in conversations(of: user) {
            guard let id = conversation["id"]?.stringValue else { continue }
            for member in conversation["members"]?.arrayValue ?? [] where member["membershipStatus"] == pending {
                if let name = member["userName"]?.stringValue { pairs.insert([id, name]) }
            }
        }
        return pairs
    }
}
