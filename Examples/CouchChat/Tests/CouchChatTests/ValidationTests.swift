import CouchChat
import Foundation
import PartitionSync
import SyncTesting
import Testing

/// The sync function's three validation rules (seed: "Data Routing, Validation, and Access
/// Control"), each refused with `validation_failed` and nothing written.
@Suite("CouchChat validation", .timeLimit(.minutes(30)))
struct ValidationTests {
    @Test("a chat's author is its writer: nobody signs as someone else, or edits another's chat")
    func chatAuthor() async throws {
        try await CouchChatHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let bob = try await app.user("bob@example.com")
            #expect(try await bob.setProfile(acceptsAnyInvitation: true).isAck)
            #expect(try await ann.createRoom("r1", title: "Team", inviting: [bob.email]).isAck)
            _ = try await app.room("r1") { $0.members == [bob.email] }
            let room = try CouchChatPartitions.room("r1")

            let forged = Chat(id: "c1", room: "r1", author: bob.email, markdown: "I am bob")
            #expect(try await ann.put(forged, in: room).rejectionCode == .validationFailed)
            #expect(try await app.db.object(Chat.self, id: "c1") == nil)

            #expect(try await ann.put(Chat(id: "c1", room: "r1", author: ann.email, markdown: "hi"), in: room).isAck)
            // Bob may not rewrite Ann's chat, even keeping her name on it.
            #expect(try await bob.put(Chat(id: "c1", room: "r1", author: ann.email, markdown: "edited"), in: room).rejectionCode == .validationFailed)
            #expect(try await bob.upload([.delete(try ObjectKey(collection: Chat.collection, id: "c1"))], to: room).rejectionCode == .validationFailed)
            #expect(try await app.db.object(Chat.self, id: "c1")?.markdown == "hi")
        }
    }

    @Test("a new room has its creator as its only owner; only owners change it, and members join only by invitation")
    func roomOwners() async throws {
        try await CouchChatHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let bob = try await app.user("bob@example.com")
            let carol = try await app.user("carol@example.com")
            #expect(try await bob.setProfile(acceptsAnyInvitation: true).isAck)
            let room = try CouchChatPartitions.room("r1")

            // At creation: the creator is the owner, alone.
            var forged = Room(id: "r1", title: "Team", owner: bob.email)
            #expect(try await ann.put(forged, in: room).rejectionCode == .validationFailed)
            forged.owners = [ann.email, carol.email]
            #expect(try await ann.put(forged, in: room).rejectionCode == .validationFailed)
            forged = Room(id: "r1", title: "Team", owner: ann.email)
            forged.members = [carol.email]
            #expect(try await ann.put(forged, in: room).rejectionCode == .validationFailed)
            #expect(try await app.db.object(Room.self, id: "r1") == nil)

            #expect(try await ann.createRoom("r1", title: "Team", inviting: [bob.email]).isAck)
            var stored = try #require(try await app.room("r1") { $0.members == [bob.email] })

            // A member is not an owner: no title, owner or member changes.
            var changed = stored
            changed.title = "Bob's room"
            #expect(try await bob.put(changed, in: room).rejectionCode == .validationFailed)
            changed = stored
            changed.owners.append(bob.email)
            #expect(try await bob.put(changed, in: room).rejectionCode == .validationFailed)

            // An owner changes the title, but adds members only through pendingMembers, and
            // owners only from the room's people.
            changed = stored
            changed.title = "Team, renamed"
            #expect(try await ann.put(changed, in: room).isAck)
            stored = try #require(try await app.db.object(Room.self, id: "r1"))
            changed = stored
            changed.members = (changed.members ?? []) + [carol.email]
            #expect(try await ann.put(changed, in: room).rejectionCode == .validationFailed)
            changed = stored
            changed.owners.append(carol.email)
            #expect(try await ann.put(changed, in: room).rejectionCode == .validationFailed)
            changed = stored
            changed.owners.append(bob.email)
            #expect(try await ann.put(changed, in: room).isAck, "promoting a member to owner")
            #expect(try await app.db.object(Room.self, id: "r1")?.owners == [ann.email, bob.email])
        }
    }

    @Test("a member may leave a room, removing only themselves from its members, and nothing else")
    func memberLeaves() async throws {
        try await CouchChatHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let bob = try await app.user("bob@example.com")
            let carol = try await app.user("carol@example.com")
            #expect(try await bob.setProfile(acceptsAnyInvitation: true).isAck)
            #expect(try await carol.setProfile(acceptsAnyInvitation: true).isAck)
            let room = try CouchChatPartitions.room("r1")
            #expect(try await ann.createRoom("r1", title: "Team", inviting: [bob.email, carol.email]).isAck)
            let stored = try #require(try await app.room("r1") { Set($0.members ?? []) == [bob.email, carol.email] })
            let members = Path.field("members")
            let key = try ObjectKey(collection: Room.collection, id: "r1")

            // Bob may not take Carol out, nor leave and rename the room in one change.
            #expect(try await bob.upload([.arrayRemove(key, path: members, match: .string(carol.email))], to: room).rejectionCode == .validationFailed)
            var changed = stored
            changed.members = [carol.email]
            changed.title = "Bob was here"
            #expect(try await bob.put(changed, in: room).rejectionCode == .validationFailed)
            // Nor add a field the model does not know while he leaves.
            #expect(try await bob.upload(
                [.arrayRemove(key, path: members, match: .string(bob.email)), .set(key, path: .field("banner"), value: "owned")], to: room
            ).rejectionCode == .validationFailed)

            #expect(try await bob.upload([.arrayRemove(key, path: members, match: .string(bob.email))], to: room).isAck)
            #expect(try await app.db.object(Room.self, id: "r1")?.members == [carol.email])
            // Gone: he writes there no more.
            #expect(try await bob.put(Chat(room: "r1", author: bob.email, markdown: "still here?"), in: room).rejectionCode == .permissionDenied)
        }
    }

    @Test("a profile's id comes from its owner's email: only its owner writes it")
    func profileOwner() async throws {
        try await CouchChatHarness.with { app in
            let ann = try await app.user("ann@example.com")
            _ = try await app.user("bob@example.com")
            let profiles = CouchChatPartitions.profiles
            // Bob's profile, written by Ann.
            #expect(try await ann.put(Profile(email: "bob@example.com", nick: "bobby"), in: profiles).rejectionCode == .validationFailed)
            // Her own id with someone else's email.
            var mine = Profile(email: ann.email, nick: "annie")
            mine.email = "bob@example.com"
            #expect(try await ann.put(mine, in: profiles).rejectionCode == .validationFailed)
            // Her own.
            #expect(try await ann.put(Profile(email: ann.email, nick: "annie"), in: profiles).isAck)
            #expect(try await app.db.object(Profile.self, id: Profile.id(of: ann.email))?.nick == "annie")
            #expect(try await app.db.object(Profile.self, id: Profile.id(of: "bob@example.com"))?.nick == "bob")
            // The id is the lowercased email.
            #expect(try await ann.put(Profile(email: "Ann@Example.com"), in: profiles).isAck)
            let bobs = try ObjectKey(collection: Profile.collection, id: Profile.id(of: "bob@example.com"))
            #expect(try await ann.upload([.delete(bobs)], to: profiles).rejectionCode == .validationFailed)
            #expect(try await app.db.object(Profile.self, id: Profile.id(of: "bob@example.com")) != nil)
        }
    }

    @Test("a profile, copied to every user, is bounded: no 300,000-character nickname, no 20,000 addresses (issue 29, finding 4)")
    func boundedProfile() async throws {
        try await CouchChatHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let profiles = CouchChatPartitions.profiles
            let huge = try await ann.put(Profile(email: ann.email, nick: String(repeating: "n", count: 300_000)), in: profiles)
            guard case .rejected(_, _, let error, _) = huge else {
                Issue.record("a 300,000-character nickname was \(huge)")
                return
            }
            #expect(error.code == .validationFailed)
            #expect(error.details?["field"] == "nick")
            let addresses = (0..<20_000).map { "someone\($0)@example.com" }
            let many = try await ann.put(Profile(email: ann.email, acceptsInvitationsFrom: addresses), in: profiles)
            #expect(many.rejectionCode == .validationFailed)
            // An undeclared field is refused too; at the bounds, the profile is accepted.
            let extra = try ObjectKey(collection: Profile.collection, id: Profile.id(of: ann.email))
            #expect(try await ann.upload([.set(extra, path: try Path(parsing: "payload"), value: "x")], to: profiles).rejectionCode == .validationFailed)
            let bounded = Profile(
                email: ann.email, nick: String(repeating: "n", count: CouchChatSchemas.maximumNickLength),
                acceptsInvitationsFrom: Array(addresses.prefix(CouchChatSchemas.maximumAcceptedInviters)))
            #expect(try await ann.put(bounded, in: profiles).isAck)
            #expect(try await ann.put(Profile(email: ann.email, nick: String(repeating: "n", count: CouchChatSchemas.maximumNickLength + 1)), in: profiles)
                .rejectionCode == .validationFailed)
        }
    }
}
