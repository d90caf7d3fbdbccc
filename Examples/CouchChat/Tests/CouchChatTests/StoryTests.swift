import CouchChat
import Foundation
import PartitionSync
import SyncTesting
import Testing

/// CouchChat as its users live it, over real WebSockets.
@Suite("CouchChat story", .timeLimit(.minutes(30)))
struct StoryTests {
    @Test("Ann opens a room and invites Bob; Bob finds it in his room list; they chat live; Ann removes Bob")
    func story() async throws {
        try await CouchChatHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let bob = try await app.user("bob@example.com")

            // Bob lets Ann invite him, and watches his room list.
            #expect(try await bob.setProfile(acceptsInvitationsFrom: [ann.email]).isAck)
            let bobsList = try CouchChatPartitions.user(bob.id)
            guard case .success(var list) = try await bob.client.subscribe(bobsList) else { Issue.record("bob's list"); return }

            // Ann opens a room, inviting Bob, and subscribes to it.
            #expect(try await ann.createRoom("r1", title: "Make it Happen!", inviting: [bob.email]).isAck)
            let room = try CouchChatPartitions.room("r1")
            guard case .success(var annsCopy) = try await ann.client.subscribe(room) else { Issue.record("ann's room"); return }

            // The room arrives in Bob's list live; he opens it.
            let listKey = try ObjectKey(collection: RoomList.collection, id: bob.id)
            try await bob.client.sync(bobsList, into: &list) { copy in
                copy.bodies[listKey]?["rooms"]?.arrayValue?.first?["id"] == "r1"
            }
            guard case .success(var bobsCopy) = try await bob.client.subscribe(room) else { Issue.record("bob's room"); return }

            // They chat; each sees the other's messages live.
            let hello = Chat(id: "c1", room: "r1", author: ann.email, markdown: "**Hello** Bob")
            #expect(try await ann.put(hello, in: room).isAck)
            let helloKey = try hello.objectKey
            try await bob.client.sync(room, into: &bobsCopy) { $0.bodies[helloKey]?["markdown"] == "**Hello** Bob" }
            let reply = Chat(id: "c2", room: "r1", author: bob.email, markdown: "Hi Ann")
            #expect(try await bob.put(reply, in: room).isAck)
            let replyKey = try reply.objectKey
            try await ann.client.sync(room, into: &annsCopy) { $0.bodies[replyKey]?["author"] == .string(bob.email) }

            // A picture travels as a blob: uploaded first, then referenced; members read it.
            let picture = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 17) })
            let photo = try await app.server.http.uploadBlob(picture, contentType: "image/png", token: ann.tokens.accessToken)
            #expect(try await ann.put(Chat(id: "c3", room: "r1", author: ann.email, markdown: "look", photo: photo), in: room).isAck)
            #expect(try await app.server.http.getBlob(photo.digest, in: room, token: bob.tokens.accessToken).data == picture)

            // Ann takes Bob out of the room: his subscription ends, the room leaves his list.
            var stored = try #require(try await app.db.object(Room.self, id: "r1"))
            stored.members = []   // a put sets the fields it has: an empty list, not a missing one
            #expect(try await ann.put(stored, in: room).isAck)
            let others = try await bob.client.sync(bobsList, into: &list) { copy in
                copy.bodies[listKey]?["rooms"]?.arrayValue?.isEmpty == true
            }
            let revoked = others.contains(.unsubscribed(partition: room, code: .permissionRevoked))
            if !revoked {
                let ended = try await bob.client.next(timeout: .seconds(10)) { message in
                    if case .unsubscribed = message { return true }
                    return false
                }
                #expect(ended == .unsubscribed(partition: room, code: .permissionRevoked))
            }
            // Out of the room, Bob no longer reads its pictures.
            #expect(try await app.server.http.getBlob(photo.digest, in: room, token: bob.tokens.accessToken).status == 404)
            #expect(try await app.db.deadLetters().isEmpty)
        }
    }
}
