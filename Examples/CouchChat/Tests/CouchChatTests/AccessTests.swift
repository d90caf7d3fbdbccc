import CouchChat
import Foundation
import PartitionSync
import SyncTesting
import Testing

/// Access derived from documents, as the sync function's `access()` grants it: a user reads
/// and writes `room=R` exactly while room R's document lists them.
@Suite("CouchChat access", .timeLimit(.minutes(30)))
struct AccessTests {
    @Test("outsiders neither read nor write a room; members do; every user reads every profile; a room list is its user's alone")
    func access() async throws {
        try await CouchChatHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let bob = try await app.user("bob@example.com")
            let eve = try await app.user("eve@example.com")
            #expect(try await bob.setProfile(acceptsInvitationsFrom: [ann.email]).isAck)
            #expect(try await ann.createRoom("r1", title: "Team", inviting: [bob.email]).isAck)
            _ = try await app.room("r1") { $0.members == [bob.email] }
            let room = try CouchChatPartitions.room("r1")

            // Eve, who was not invited.
            guard case .failure(let denied) = try await eve.client.subscribe(room) else { Issue.record("eve read the room"); return }
            #expect(denied.code == .permissionDenied)
            #expect(try await eve.put(Chat(room: "r1", author: eve.email, markdown: "let me in"), in: room).rejectionCode == .permissionDenied)
            let pulled = try await app.server.http.get("/v1/partitions/room%3Dr1/changes", token: eve.tokens.accessToken)
            #expect(pulled.status == 403)

            // Bob, a member, reads and writes.
            guard case .success(let copy) = try await bob.client.subscribe(room) else { Issue.record("bob cannot read the room"); return }
            #expect(copy.objects.keys.contains(try ObjectKey(collection: Room.collection, id: "r1")))
            #expect(try await bob.put(Chat(room: "r1", author: bob.email, markdown: "hello"), in: room).isAck)

            // Profiles: everyone's, to everyone.
            guard case .success(let profiles) = try await eve.client.subscribe(CouchChatPartitions.profiles) else {
                Issue.record("eve cannot read the profiles"); return
            }
            #expect(profiles.objects.count == 3)

            // Room lists: one's own.
            guard case .success(let list) = try await bob.client.subscribe(try CouchChatPartitions.user(bob.id)) else {
                Issue.record("bob cannot read his room list"); return
            }
            #expect(try list.bodies[try ObjectKey(collection: RoomList.collection, id: bob.id)].map {
                try JSONValue.object($0).decode(RoomList.self).rooms.map(\.id)
            } == ["r1"])
            guard case .failure(let other) = try await eve.client.subscribe(try CouchChatPartitions.user(bob.id)) else {
                Issue.record("eve read bob's room list"); return
            }
            #expect(other.code == .permissionDenied)
        }
    }

    @Test("a member added gets in at once; a member removed loses their open subscription and their writes")
    func membershipChanges() async throws {
        try await CouchChatHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let bob = try await app.user("bob@example.com")
            #expect(try await bob.setProfile(acceptsAnyInvitation: true).isAck)
            #expect(try await ann.createRoom("r1", title: "Team").isAck)
            let room = try CouchChatPartitions.room("r1")
            guard case .failure = try await bob.client.subscribe(room) else { Issue.record("bob read the room before his invitation"); return }

            var stored = try #require(try await app.db.object(Room.self, id: "r1"))
            stored.pendingMembers = [bob.email]
            #expect(try await ann.put(stored, in: room).isAck)
            _ = try await app.room("r1") { $0.members == [bob.email] }
            guard case .success = try await bob.client.subscribe(room) else { Issue.record("bob cannot read the room he joined"); return }

            // Ann removes Bob: his subscription ends, and his writes are refused.
            stored = try #require(try await app.db.object(Room.self, id: "r1"))
            stored.members = []   // a put sets the fields it has: an empty list, not a missing one
            #expect(try await ann.put(stored, in: room).isAck)
            let ended = try await bob.client.next(timeout: .seconds(10)) { message in
                if case .unsubscribed = message { return true }
                return false
            }
            #expect(ended == .unsubscribed(partition: room, code: .permissionRevoked))
            #expect(try await bob.put(Chat(room: "r1", author: bob.email, markdown: "still here?"), in: room).rejectionCode == .permissionDenied)
            // And his room list no longer shows it.
            #expect(try await TestTriggers.eventually { try await app.db.object(RoomList.self, id: bob.id)?.rooms.isEmpty == true })
        }
    }
}
