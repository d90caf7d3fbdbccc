import Foundation
import PartitionSync
@testable import RChat
import SyncProtocol
import SyncTesting
import Testing

/// RChat's rules, validator and triggers run in-process on the test kit's in-memory objects,
/// as any application's can be: the same code the server runs, given what its database would
/// hold and the events it would record, without PostgreSQL. The tests beside these run the
/// same behaviour through real servers.
@Suite("RChat in memory")
struct RChatInMemoryTests {
    let objects = InMemoryObjects()
    let permissions = RChat.application.permissions
    var rules: PermissionContext { PermissionContext(source: objects) }
    var trigger: TriggerContext { TriggerContext(transaction: objects, trigger: "test") }

    func user(_ id: String, conversations: [Conversation] = [], presence: Presence = .offLine) throws -> User {
        let user = User(_id: id, userName: "\(id)@example.com", conversations: conversations, presence: presence)
        try objects.put(user, in: RChatPartitions.user(id))
        return user
    }

    func conversation(_ id: String, members: [String]) -> Conversation {
        Conversation(id: id, displayName: id, members: members.map { Member(userName: "\($0)@example.com", membershipStatus: .active) })
    }

    @Test("user=X is X's alone; all-users is read by every principal and written by no client")
    func userAndAllUsers() async throws {
        let annsRecord = RChatPartitions.user("ann")
        #expect(try await permissions.canRead(.user("ann"), annsRecord, context: rules))
        #expect(try await permissions.canWrite(.user("ann"), annsRecord, context: rules))
        #expect(try await !permissions.canRead(.user("bob"), annsRecord, context: rules))
        #expect(try await !permissions.canRead(.service("bot"), annsRecord, context: rules))
        for principal in [Principal.user("ann"), .service("bot")] {
            #expect(try await permissions.canRead(principal, RChatPartitions.allUsers, context: rules))
            #expect(try await !permissions.canWrite(principal, RChatPartitions.allUsers, context: rules))
        }
        #expect(try await !permissions.canRead(.user("ann"), Membership.partition("c1"), context: rules), "membership records have no rule")
    }

    @Test("a conversation admits the members its membership record lists; before the record exists, whoever lists it")
    func conversationRule() async throws {
        let c1 = RChatPartitions.conversation("c1")
        _ = try user("ann", conversations: [conversation("c1", members: ["bob"])])
        _ = try user("eve", conversations: [conversation("c1", members: [])])
        // No record yet: a listing claims it.
        #expect(try await permissions.canRead(.user("ann"), c1, context: rules))
        #expect(try await permissions.canWrite(.user("eve"), c1, context: rules))
        #expect(try await !permissions.canRead(.user("bob"), c1, context: rules))

        try objects.put(Membership(conversation: "c1", creator: "ann", members: ["ann", "bob"]), in: Membership.partition("c1"))
        for (userID, admitted) in [("ann", true), ("bob", true), ("eve", false)] {
            #expect(try await permissions.canRead(.user(userID), c1, context: rules) == admitted, "\(userID)")
            #expect(try await permissions.canWrite(.user(userID), c1, context: rules) == admitted, "\(userID)")
        }
        #expect(try await !permissions.canRead(.service("bot"), c1, context: rules))
    }

    @Test("each kind of partition holds its own collection; a message's author is its writer")
    func validator() async throws {
        _ = try user("ann")
        let context = ValidationContext(source: objects)
        let message = ChatMessage(_id: "m1", conversationID: "c1", author: "ann@example.com", text: "hi")
        let c1 = RChatPartitions.conversation("c1")
        try await permissions.check(try ObjectChange.creation(of: message, in: c1), in: c1, by: .user("ann"), context: context)

        let misplaced = RChatPartitions.user("ann")
        await #expect(throws: SyncError.self) {
            try await permissions.check(try ObjectChange.creation(of: message, in: misplaced), in: misplaced, by: .user("ann"), context: context)
        }
        let forged = ChatMessage(_id: "m2", conversationID: "c1", author: "bob@example.com", text: "I am bob")
        do {
            try await permissions.check(try ObjectChange.creation(of: forged, in: c1), in: c1, by: .user("ann"), context: context)
            Issue.record("a message signed by someone else passed")
        } catch let error as SyncError {
            #expect(error.code == .validationFailed)
        }
    }

    @Test("a verified registration makes the User record and its Chatster, On-Line when a session is open; a deletion takes both")
    func registrationAndDeletion() async throws {
        objects.setOpenSessions(1, of: "ann")
        try await RChatTriggers.userRegistered.handler(.user(.registered, userID: "ann", email: "ann@example.com"), trigger)
        let record = try #require(try await trigger.object(User.self, id: "ann"))
        #expect(record.userName == "ann@example.com" && record.presence == .onLine)
        #expect(try await trigger.object(Chatster.self, id: "ann")?.presence == .onLine)
        // An email not proved yet makes nothing.
        try await RChatTriggers.userRegistered.handler(.user(.registered, userID: "bob", email: "bob@example.com", verified: false), trigger)
        #expect(try await trigger.object(User.self, id: "bob") == nil)

        try await RChatTriggers.userDeleted.handler(.user(.deleted, userID: "ann", email: "ann@example.com"), trigger)
        #expect(try await trigger.object(User.self, id: "ann") == nil)
        #expect(try await trigger.object(Chatster.self, id: "ann") == nil)
    }

    @Test("a run of new messages raises each member's unread count once, by the messages of its room, and no one else's")
    func unreadCounts() async throws {
        _ = try user("ann", conversations: [conversation("c1", members: ["bob"]), conversation("c2", members: ["bob"])])
        _ = try user("bob", conversations: [conversation("c1", members: ["ann"])])
        // Eve lists c1 but is not a member of it: her record learns nothing from it.
        _ = try user("eve", conversations: [conversation("c1", members: [])])
        try objects.put(Membership(conversation: "c1", creator: "ann", members: ["ann", "bob"]), in: Membership.partition("c1"))
        var events: [ChangeEvent] = []
        for (id, room) in [("m1", "c1"), ("m2", "c1"), ("m3", "c2")] {
            let message = ChatMessage(_id: id, conversationID: room, author: "ann@example.com", text: id)
            let partition = RChatPartitions.conversation(room)
            let change = try ObjectChange.creation(of: message, in: partition)
            events.append(.object(change, in: partition, author: "ann", position: Int64(events.count + 1)))
        }
        #expect(events.allSatisfy(RChatTriggers.unreadCounts.matches))

        try await RChatTriggers.unreadCounts.runHandler!(events, trigger)

        func unread(_ userID: String) async throws -> [String: Int] {
            let record = try #require(try await trigger.object(User.self, id: userID))
            return Dictionary(uniqueKeysWithValues: record.conversations.map { ($0.id, $0.unreadCount) })
        }
        #expect(try await unread("ann") == ["c1": 2, "c2": 1])
        #expect(try await unread("bob") == ["c1": 2])
        #expect(try await unread("eve") == ["c1": 0])
    }

    @Test("a first session sets a user On-Line and the last one closing Off-Line with lastSeenAt; a Hidden user stays Hidden")
    func presence() async throws {
        _ = try user("ann")
        _ = try user("bob", presence: .hidden)
        let closedAt = Date(timeIntervalSince1970: 1_700_000_000)
        func session(_ operation: ChangeEvent.Operation, _ userID: String) -> ChangeEvent {
            ChangeEvent(position: 1, kind: .session, operation: operation, userID: userID, author: "system", created: closedAt)
        }
        try await RChatTriggers.presence.handler(session(.opened, "ann"), trigger)
        #expect(try await trigger.object(User.self, id: "ann")?.presence == .onLine)
        try await RChatTriggers.presence.handler(session(.closed, "ann"), trigger)
        let ann = try #require(try await trigger.object(User.self, id: "ann"))
        #expect(ann.presence == .offLine && ann.lastSeenAt == closedAt)
        try await RChatTriggers.presence.handler(session(.opened, "bob"), trigger)
        #expect(try await trigger.object(User.self, id: "bob")?.presence == .hidden)
    }

    @Test("a conversation a user lists first gets its membership record, with them as creator and member; the Chatster, which copies none of it, is not written")
    func firstListingCreatesMembership() async throws {
        let before = try user("ann")
        var after = before
        after.conversations = [conversation("c1", members: [])]
        let changes = try await trigger.save(after, in: RChatPartitions.user("ann"))
        let event = ChangeEvent.object(try #require(changes.first), in: RChatPartitions.user("ann"), author: "ann")
        #expect(RChatTriggers.userChanged.matches(event))

        try await RChatTriggers.userChanged.handler(event, trigger)

        let membership = try #require(try await trigger.object(Membership.self, id: "c1"))
        #expect(membership.creator == "ann" && membership.members == ["ann"])
        #expect(try await trigger.object(Chatster.self, id: "ann") == nil)
    }

    @Test("a rename by update or by a whole put is handed to the membership trigger without the conversations, and the Chatster follows; a change of the conversations comes whole")
    func imagesWithoutConversations() async throws {
        let partition = RChatPartitions.user("ann")
        let images = RChatTriggers.userChanged.images
        var ann = try user("ann", conversations: [conversation("c1", members: ["ann"])])
        /// The trigger's handling of a write's change, with its images as the event log reads them.
        func handle(_ changes: [ObjectChange]) async throws -> ChangeEvent {
            let event = images.applied(to: ChangeEvent.object(try #require(changes.first), in: partition, author: "ann"))
            try #require(RChatTriggers.userChanged.matches(event))
            try await RChatTriggers.userChanged.handler(event, trigger)
            return event
        }
        ann.userName = "ann-1"
        let renamed = try await handle(try await trigger.save(ann, in: partition))
        #expect(renamed.operation == .update && renamed.before?["conversations"] == nil && renamed.after?["conversations"] == nil)
        #expect(try await trigger.object(Chatster.self, id: "ann")?.userName == "ann-1")
        ann.userName = "ann-2"
        let replaced = try await handle(try await trigger.put(ann, in: partition))
        #expect(replaced.operation == .replace && replaced.after?["conversations"] == nil)
        #expect(try await trigger.object(Chatster.self, id: "ann")?.userName == "ann-2")
        #expect(try await trigger.object(Membership.self, id: "c1") == nil, "a rename reconciled conversations it was not handed")
        ann.conversations.append(conversation("c2", members: []))
        let listed = try await handle(try await trigger.save(ann, in: partition))
        #expect(listed.after?["conversations"] != nil)
        #expect(try await trigger.object(Membership.self, id: "c2")?.members == ["ann"])
    }

    @Test("the unread-count trigger's own writes are not events the membership trigger reads")
    func unreadWritesPassedOver() throws {
        let partition = RChatPartitions.user("ann")
        let change = ObjectChange(
            key: RChat.userKey("ann"), before: .live(["conversations": [["id": "c1", "unreadCount": 0]]]),
            after: .live(["conversations": [["id": "c1", "unreadCount": 1]]]), encodedBody: nil)
        #expect(!RChatTriggers.userChanged.matches(.object(change, in: partition, author: RChatTriggers.unreadCountsAuthor)))
        #expect(RChatTriggers.userChanged.matches(.object(change, in: partition, author: "ann")) == false, "an unread count alone concerns no one")
    }

    @Test("the membership trigger's own updates of User records (an invitee's copy) are not events it reads; the same change by the user is")
    func ownWritesPassedOver() throws {
        let partition = RChatPartitions.user("bob")
        let copy: JSONValue = ["id": "c1", "displayName": "Room", "unreadCount": 0, "members": [["userName": "ann", "membershipStatus": "Membership active"]]]
        let change = ObjectChange(
            key: RChat.userKey("bob"), before: .live(["conversations": []]), after: .live(["conversations": [copy]]), encodedBody: nil)
        #expect(RChatTriggers.userChangedAuthor == "trigger:" + RChatTriggers.userChanged.name)
        #expect(!RChatTriggers.userChanged.matches(.object(change, in: partition, author: RChatTriggers.userChangedAuthor)))
        #expect(RChatTriggers.userChanged.matches(.object(change, in: partition, author: "bob")))
    }

    /// Runs the membership trigger on the save of `user` by `author`.
    func changed(_ user: User, by author: String) async throws {
        let partition = RChatPartitions.user(user._id)
        let changes = try await trigger.save(user, in: partition)
        let event = ChangeEvent.object(try #require(changes.first), in: partition, author: author)
        try #require(RChatTriggers.userChanged.matches(event))
        try await RChatTriggers.userChanged.handler(event, trigger)
    }

    func pending(_ id: String, creator: String, invitees: [String]) -> Conversation {
        Conversation(
            id: id, displayName: id,
            members: [Member(userName: "\(creator)@example.com", membershipStatus: .active)]
                + invitees.map { Member(userName: "\($0)@example.com", membershipStatus: .pending) })
    }

    @Test("an invitee whose User record is made after the invitation (its registration's trigger came later) gets the room when it is made; one that never registers waits in the membership record")
    func invitationWaitsForTheRecord() async throws {
        var ann = try user("ann")
        ann.conversations = [pending("c1", creator: "ann", invitees: ["bob", "carol"])]
        try await changed(ann, by: "ann")
        var membership = try #require(try await trigger.object(Membership.self, id: "c1"))
        #expect(membership.members == ["ann"])
        #expect(Set(membership.invited.map(\.userName)) == ["bob@example.com", "carol@example.com"])
        #expect(membership.invited.allSatisfy { $0.inviter == "ann" })

        // bob's record is made, as the registration trigger makes it.
        let bob = User(_id: "bob", userName: "bob@example.com")
        try await changed(bob, by: "trigger:rchat.user-registered")

        membership = try #require(try await trigger.object(Membership.self, id: "c1"))
        #expect(membership.members == ["ann", "bob"])
        #expect(membership.invited.map(\.userName) == ["carol@example.com"])
        let copy = try #require(try await trigger.object(User.self, id: "bob")?.conversations.first)
        #expect(copy.id == "c1" && copy.members.map(\.userName) == ["ann@example.com", "bob@example.com"])
        let marks = try #require(try await trigger.object(User.self, id: "ann")?.conversations.first?.members)
        #expect(marks.map(\.membershipStatus) == [.active, .active, .pending])
    }

    @Test("an invitation the inviter took back before the invitee's record was made is not delivered")
    func withdrawnInvitationNotDelivered() async throws {
        var ann = try user("ann")
        ann.conversations = [pending("c1", creator: "ann", invitees: ["bob"])]
        try await changed(ann, by: "ann")
        ann.conversations = [pending("c1", creator: "ann", invitees: [])]
        try await changed(ann, by: "ann")

        try await changed(User(_id: "bob", userName: "bob@example.com"), by: "trigger:rchat.user-registered")
        let membership = try #require(try await trigger.object(Membership.self, id: "c1"))
        #expect(membership.members == ["ann"] && membership.invited.isEmpty)
        #expect(try await trigger.object(User.self, id: "bob")?.conversations.isEmpty == true)
    }

    @Test("waiting invitations are bounded by maximumMembers per room")
    func waitingInvitationsBounded() async throws {
        let limits = RChatLimits(maximumMembers: 3)
        var ann = try user("ann")
        ann.conversations = [pending("c1", creator: "ann", invitees: ["b", "c"])]
        let partition = RChatPartitions.user("ann")
        let changes = try await trigger.save(ann, in: partition)
        try await RChatTriggers.userChanged(limits: limits).handler(.object(try #require(changes.first), in: partition, author: "ann"), trigger)
        ann.conversations = [pending("c1", creator: "ann", invitees: ["b", "c", "d", "e"])]
        let more = try await trigger.save(ann, in: partition)
        try await RChatTriggers.userChanged(limits: limits).handler(.object(try #require(more.first), in: partition, author: "ann"), trigger)
        let membership = try #require(try await trigger.object(Membership.self, id: "c1"))
        #expect(membership.invited.map(\.userName) == ["b@example.com", "c@example.com", "d@example.com"])
    }

    @Test("a membership record written before invitations could wait decodes with none")
    func membershipWithoutInvited() throws {
        let membership = try Membership.decode(["_id": "c1", "creator": "ann", "members": ["ann"]], of: Membership.key("c1"))
        #expect(membership.invited.isEmpty && membership.members == ["ann"])
    }
}
