import CouchChat
import PartitionSync
import SyncTesting
import Testing

/// CouchChat's trigger handlers run in-process on the test kit's in-memory objects: the same
/// handlers the server runs in its trigger transactions, given the events it would record,
/// reading, searching and writing `InMemoryObjects` (no database, no server). The end-to-end
/// tests beside these run them through a real server.
@Suite("CouchChat triggers in memory")
struct TriggersInMemoryTests {
    let objects = InMemoryObjects()
    var context: TriggerContext { TriggerContext(transaction: objects, trigger: "test") }

    @Test("a deleted account leaves every room: a room it owned alone passes to its first member, or goes when it has none")
    func deletedAccountLeavesRooms() async throws {
        objects.addAccount(userID: "u-ann", email: "ann@example.com")
        var shared = Room(id: "shared", title: "Shared", owner: "ann@example.com")
        shared.members = ["bob@example.com", "eve@example.com"]
        let alone = Room(id: "alone", title: "Alone", owner: "ann@example.com")
        var bobs = Room(id: "bobs", title: "Bob's", owner: "bob@example.com")
        bobs.members = ["ann@example.com"]
        for room in [shared, alone, bobs] { try objects.put(room, in: try CouchChatPartitions.room(room._id)) }
        let registered = ChangeEvent.user(.registered, userID: "u-ann", email: "ann@example.com")
        try await CouchChatTriggers.accounts.handler(registered, context)
        #expect(try await context.object(Profile.self, id: Profile.id(of: "ann@example.com"))?.nick == "ann")
        #expect(try await context.object(RoomList.self, id: "u-ann") != nil)

        try await CouchChatTriggers.accounts.handler(.user(.deleted, userID: "u-ann", email: "ann@example.com"), context)

        let passed = try #require(try await context.object(Room.self, id: "shared"))
        #expect(passed.owners == ["bob@example.com"])
        #expect(passed.members == ["eve@example.com"])
        #expect(try await context.object(Room.self, id: "alone") == nil)
        let left = try #require(try await context.object(Room.self, id: "bobs"))
        #expect(left.owners == ["bob@example.com"] && left.members == nil)
        #expect(try await context.object(Profile.self, id: Profile.id(of: "ann@example.com")) == nil)
        #expect(try await context.object(RoomList.self, id: "u-ann") == nil)
    }

    @Test("the friend bot admits an invitee whose profile accepts the owner and records why the others are declined")
    func friendBot() async throws {
        objects.addAccount(userID: "u-ann", email: "ann@example.com")
        let profiles = CouchChatPartitions.profiles
        try objects.put(Profile(email: "bob@example.com", acceptsInvitationsFrom: ["ANN@example.com"]), in: profiles)
        try objects.put(Profile(email: "eve@example.com"), in: profiles)
        let partition = try CouchChatPartitions.room("r1")
        try objects.put(Room(id: "r1", title: "Team", owner: "ann@example.com"), in: partition)
        let before = try #require(try await context.object(Room.self, id: "r1"))
        var invited = before
        invited.pendingMembers = ["bob@example.com", "eve@example.com", "nobody@example.com"]
        let changes = try await context.save(invited, in: partition)
        let event = ChangeEvent.object(try #require(changes.first), in: partition, author: "u-ann")
        #expect(CouchChatTriggers.friendBot.matches(event))

        try await CouchChatTriggers.friendBot.handler(event, context)

        let room = try #require(try await context.object(Room.self, id: "r1"))
        #expect(room.members == ["bob@example.com"])
        #expect(room.pendingMembers == nil)
        #expect(room.declinedInvitations?.map(\.email) == ["eve@example.com", "nobody@example.com"])
        #expect(room.declinedInvitations?.first?.reason == "eve@example.com does not accept invitations from ann@example.com")
        // The bot's own write (pendingMembers emptied) is not an event it handles again.
        let own = ObjectChange(key: try room.objectKey, before: .live(try JSONValue(encoding: invited).objectValue!), after: .live(try JSONValue(encoding: room).objectValue!), encodedBody: nil)
        #expect(!CouchChatTriggers.friendBot.matches(.object(own, in: partition, author: "system")))
    }

    @Test("deleting a room deletes its chats, found by the index on channel_id, and nothing else")
    func deletedRoomTakesItsChats() async throws {
        let r1 = try CouchChatPartitions.room("r1")
        let r2 = try CouchChatPartitions.room("r2")
        try objects.put(Room(id: "r1", title: "One", owner: "ann@example.com"), in: r1)
        for (id, room, partition) in [("c1", "r1", r1), ("c2", "r1", r1), ("c3", "r2", r2)] {
            try objects.put(Chat(id: id, room: room, author: "ann@example.com", markdown: id), in: partition)
        }
        let changes = try await context.apply([.delete(try ObjectKey(collection: Room.collection, id: "r1"))], in: r1)
        let event = ChangeEvent.object(try #require(changes.first), in: r1, author: "u-ann")
        #expect(event.operation == .delete && CouchChatTriggers.deletedRooms.matches(event))

        try await CouchChatTriggers.deletedRooms.handler(event, context)

        #expect(objects.all.map(\.object.key.id) == ["c3"])
    }
}
