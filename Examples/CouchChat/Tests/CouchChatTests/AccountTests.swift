import CouchChat
import Foundation
import PartitionSync
import SyncTesting
import Testing

/// Accounts: a profile and a room list made at registration; a deleted account leaves
/// everything it was in.
@Suite("CouchChat accounts", .timeLimit(.minutes(30)))
struct AccountTests {
    @Test("a deleted account loses its profile and list, and leaves its rooms: one it owned alone passes to a member or goes")
    func deletion() async throws {
        try await CouchChatHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let bob = try await app.user("bob@example.com")
            let carol = try await app.user("carol@example.com")
            #expect(try await bob.setProfile(acceptsAnyInvitation: true).isAck)
            #expect(try await carol.setProfile(acceptsAnyInvitation: true).isAck)
            #expect(try await ann.createRoom("shared", title: "Shared", inviting: [bob.email]).isAck)
            #expect(try await bob.createRoom("bobs", title: "Bob's", inviting: [carol.email]).isAck)
            #expect(try await bob.createRoom("alone", title: "Alone").isAck)
            _ = try await app.room("shared") { $0.members == [bob.email] }
            _ = try await app.room("bobs") { $0.members == [carol.email] }
            #expect(try await TestTriggers.eventually { try await app.db.object(RoomList.self, id: bob.id)?.rooms.count == 3 })

            let deleted = try await app.server.http.request("DELETE", "/v1/auth/user", body: nil, token: bob.tokens.accessToken)
            #expect(deleted.status == 204 || deleted.status == 200)
            #expect(try await TestTriggers.eventually { try await app.db.object(Room.self, id: "alone") == nil })
            #expect(try await app.room("shared") { $0.members == nil }?.owners == [ann.email])
            let bobs = try await app.room("bobs") { $0.owners == [carol.email] }
            #expect(bobs?.owners == [carol.email] && bobs?.members == nil)
            #expect(try await app.db.object(Profile.self, id: Profile.id(of: bob.email)) == nil)
            #expect(try await app.db.object(RoomList.self, id: bob.id) == nil)
            #expect(try await TestTriggers.eventually { try await app.db.object(RoomList.self, id: carol.id)?.rooms.map(\.id) == ["bobs"] })
            #expect(try await app.db.deadLetters().isEmpty)
        }
    }

    @Test("a deleted room takes its chats with it, and nobody makes it again to own its history")
    func deletedRoom() async throws {
        try await CouchChatHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let eve = try await app.user("eve@example.com")
            #expect(try await ann.createRoom("secret", title: "Secret").isAck)
            let room = try CouchChatPartitions.room("secret")
            for n in 0..<150 {
                #expect(try await ann.put(Chat(id: "c\(n)", room: "secret", author: ann.email, markdown: "private \(n)"), in: room).isAck)
            }
            #expect(try await ann.upload([.delete(try ObjectKey(collection: Room.collection, id: "secret"))], to: room).isAck)
            // Eve knows the id: she cannot make the room again and read what is left in it.
            #expect(try await eve.createRoom("secret", title: "Mine now").rejectionCode == .validationFailed)
            #expect(try await TestTriggers.eventually { try await app.db.objects(in: room).isEmpty })
            #expect(try await app.db.deadLetters().isEmpty)
        }
    }
}
