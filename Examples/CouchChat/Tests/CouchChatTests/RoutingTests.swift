import CouchChat
import Foundation
import PartitionSync
import SyncTesting
import Testing

/// The sync function's routing: which documents go into which partition.
@Suite("CouchChat routing", .timeLimit(.minutes(30)))
struct RoutingTests {
    @Test("each partition holds its own kinds of document, each of its type and model, in its own room")
    func routing() async throws {
        try await CouchChatHarness.with { app in
            let ann = try await app.user("ann@example.com")
            #expect(try await ann.createRoom("r1", title: "Team").isAck)
            let room = try CouchChatPartitions.room("r1")

            // A chat names the room it is in.
            #expect(try await ann.put(Chat(room: "r2", author: ann.email, markdown: "lost"), in: room).rejectionCode == .validationFailed)
            // A chat needs its room.
            #expect(try await ann.put(Chat(room: "nowhere", author: ann.email, markdown: "hi"), in: try CouchChatPartitions.room("nowhere"))
                .rejectionCode == .validationFailed)
            // A room lives in its own partition.
            #expect(try await ann.put(Room(id: "r3", title: "Elsewhere", owner: ann.email), in: room).rejectionCode == .validationFailed)
            // Profiles go to profiles=all, rooms and chats to their room.
            #expect(try await ann.put(Profile(email: "new@example.com"), in: room).rejectionCode == .validationFailed)
            #expect(try await ann.put(Room(id: "r4", title: "T", owner: ann.email), in: CouchChatPartitions.profiles).rejectionCode == .validationFailed)
            // Nobody writes a user partition.
            #expect(try await ann.put(RoomList(userID: ann.id), in: try CouchChatPartitions.user(ann.id)).rejectionCode == .permissionDenied)
            // A document's type is its collection, and it is its model.
            let key = try ObjectKey(collection: Chat.collection, id: "c-typed")
            let body: [String: JSONValue] = [
                "type": "room", "channel_id": "r1", "author": .string(ann.email), "created_at": "2026-01-01T00:00:00Z", "markdown": "x",
            ]
            #expect(try await ann.upload([.put(key, body: body)], to: room).rejectionCode == .validationFailed)
            #expect(try await ann.upload([.put(key, body: ["type": "chat", "markdown": 42])], to: room).rejectionCode == .validationFailed)

            #expect(try await ann.put(Chat(id: "c1", room: "r1", author: ann.email, markdown: "hi"), in: room).isAck)
            #expect(try await app.db.objects(Chat.self, in: room).keys.sorted() == ["c1"])
        }
    }
}
