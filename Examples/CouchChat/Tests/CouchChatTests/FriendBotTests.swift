import CouchChat
import Foundation
import PartitionSync
import SyncTesting
import Testing

/// The friend bot: owners list invitees in `pendingMembers`; the bot moves each into
/// `members` when the invitee's profile accepts that owner, and records why not otherwise.
@Suite("CouchChat friend bot", .timeLimit(.minutes(30)))
struct FriendBotTests {
    @Test("invitations are carried out by the invitees' consent, and declined with the reason otherwise")
    func consent() async throws {
        try await CouchChatHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let anyone = try await app.user("anyone@example.com")
            let friend = try await app.user("friend@example.com")
            let picky = try await app.user("picky@example.com")
            let shy = try await app.user("shy@example.com")
            #expect(try await anyone.setProfile(acceptsAnyInvitation: true).isAck)
            #expect(try await friend.setProfile(acceptsInvitationsFrom: [ann.email]).isAck)
            #expect(try await picky.setProfile(acceptsInvitationsFrom: ["someone-else@example.com"]).isAck)
            // shy keeps the profile made at registration: invitations from nobody.

            let invited = [anyone.email, friend.email, picky.email, shy.email, "stranger@example.com"]
            #expect(try await ann.createRoom("r1", title: "Team", inviting: invited).isAck)
            let room = try #require(try await app.room("r1") { $0.pendingMembers == nil })
            #expect(Set(room.members ?? []) == [anyone.email, friend.email])
            let declined = Dictionary(uniqueKeysWithValues: (room.declinedInvitations ?? []).map { ($0.email, $0.reason) })
            #expect(declined[picky.email] == "\(picky.email) does not accept invitations from \(ann.email)")
            #expect(declined[shy.email] == "\(shy.email) does not accept invitations from \(ann.email)")
            #expect(declined["stranger@example.com"] == "stranger@example.com has no profile")
            #expect(declined.count == 3)

            // Shy changes their mind; Ann invites again and clears the old refusal.
            #expect(try await shy.setProfile(acceptsInvitationsFrom: [ann.email]).isAck)
            var again = room
            again.pendingMembers = [shy.email]
            again.declinedInvitations = room.declinedInvitations?.filter { $0.email != shy.email }
            #expect(try await ann.put(again, in: try CouchChatPartitions.room("r1")).isAck)
            let after = try #require(try await app.room("r1") { $0.pendingMembers == nil })
            #expect(Set(after.members ?? []) == [anyone.email, friend.email, shy.email])
            #expect(try await app.db.deadLetters().isEmpty)
        }
    }

    @Test("the bot's work runs as a trigger on its own: pending members of a room written to the database")
    func onItsOwn() async throws {
        try await TestDatabase.with { db in
            try await TestTriggers.running(db, [CouchChatTriggers.friendBot]) {
                let profiles = CouchChatPartitions.profiles
                try await db.apply([try Profile(email: "bob@example.com", acceptsAnyInvitation: true).putOperation()], in: profiles)
                let room = try CouchChatPartitions.room("r1")
                try await db.apply([try Room(id: "r1", title: "T", owner: "ann@example.com", pendingMembers: ["bob@example.com"]).putOperation()], in: room)
                // Written without an inviting user (the test's system principal): declined.
                #expect(try await TestTriggers.eventually { try await db.object(Room.self, id: "r1")?.pendingMembers == nil })
                #expect(try await db.object(Room.self, id: "r1")?.declinedInvitations?.first?.reason == "the invitation has no inviting user")
            }
        }
    }
}
