import CouchChat
import Foundation
import PartitionSync
import SyncTesting
import Testing

/// CouchChat's rules and validator tested in-process, on the test kit's in-memory objects: no
/// database, no server, milliseconds each (the end-to-end tests beside these run the same
/// decisions through a real server).
@Suite("CouchChat rules and validator in memory")
struct RulesInMemoryTests {
    let permissions = CouchChat.application.permissions
    let objects = InMemoryObjects()

    init() {
        objects.addAccount(userID: "u-ann", email: "Ann@example.com")
        objects.addAccount(userID: "u-bob", email: "bob@example.com")
        objects.addAccount(userID: "u-eve", email: "eve@example.com")
    }

    @Test("a room admits its owners and members, exactly; a room not created yet may be written (to create it), not read")
    func roomRule() async throws {
        let room = try CouchChatPartitions.room("r1")
        let context = PermissionContext(source: objects)
        #expect(try await !permissions.canRead(.user("u-ann"), room, context: context))
        #expect(try await permissions.canWrite(.user("u-ann"), room, context: context))

        var document = Room(id: "r1", title: "Team", owner: "ann@example.com")
        document.members = ["bob@example.com"]
        try objects.put(document, in: room)
        for (user, admitted) in [("u-ann", true), ("u-bob", true), ("u-eve", false)] {
            #expect(try await permissions.canRead(.user(user), room, context: context) == admitted, "\(user)")
            #expect(try await permissions.canWrite(.user(user), room, context: context) == admitted, "\(user)")
        }
        #expect(try await !permissions.canRead(.service("bot"), room, context: context))
    }

    @Test("a user reads their own room list and nobody else's; no client writes it")
    func userRule() async throws {
        let context = PermissionContext(source: objects)
        let annsList = try CouchChatPartitions.user("u-ann")
        #expect(try await permissions.canRead(.user("u-ann"), annsList, context: context))
        #expect(try await !permissions.canRead(.user("u-bob"), annsList, context: context))
        #expect(try await !permissions.canWrite(.user("u-ann"), annsList, context: context))
    }

    @Test("a chat's author is its writer, in a room that admits them")
    func chatAuthor() async throws {
        let room = try CouchChatPartitions.room("r1")
        var document = Room(id: "r1", title: "Team", owner: "ann@example.com")
        document.members = ["bob@example.com"]
        try objects.put(document, in: room)
        let context = ValidationContext(source: objects)

        let signed = try ObjectChange.creation(of: Chat(id: "c1", room: "r1", author: "ann@example.com", markdown: "hi"), in: room)
        try await permissions.check(signed, in: room, by: .user("u-ann"), context: context)
        let forged = try ObjectChange.creation(of: Chat(id: "c2", room: "r1", author: "bob@example.com", markdown: "I am bob"), in: room)
        await #expect(throws: SyncError.self) { try await permissions.check(forged, in: room, by: .user("u-ann"), context: context) }
        do {
            try await permissions.check(forged, in: room, by: .user("u-ann"), context: context)
        } catch let error as SyncError {
            #expect(error.code == .validationFailed)
        }
    }

    @Test("a profile is written only by its owner")
    func profileOwner() async throws {
        let context = ValidationContext(source: objects)
        let own = try ObjectChange.creation(of: Profile(email: "bob@example.com"), in: CouchChatPartitions.profiles)
        try await permissions.check(own, in: CouchChatPartitions.profiles, by: .user("u-bob"), context: context)
        await #expect(throws: SyncError.self) {
            try await permissions.check(own, in: CouchChatPartitions.profiles, by: .user("u-eve"), context: context)
        }
    }

}
