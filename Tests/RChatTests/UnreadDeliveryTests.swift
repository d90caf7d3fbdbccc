import Foundation
import PartitionSync
import RChat
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// A member watching their User record sees every room's unread count rise when a message
/// arrives, while others come and go (presence churn) — with the default trigger settings of
/// `psync serve`.
@Suite("RChat: unread counts reach a watching member", .timeLimit(.minutes(30)))
struct UnreadDeliveryTests {
    @Test("twenty rooms, a message each, a presence change around each: every count arrives")
    func everyCount() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, application: RChat.application) { server in
                let ann = try await server.register("ann@example.com")
                let bob = try await server.register("bob@example.com")
                let bobUser = RChatPartitions.user(bob.userID)
                let annUser = RChatPartitions.user(ann.userID)
                let annApp = try await server.connect(token: ann.accessToken)
                let bobApp = try await server.connect(token: bob.accessToken)
                _ = try await annApp.next()
                _ = try await bobApp.next()
                bobApp.send(.subscribe(partition: bobUser, cursor: nil))
                var bobCopy = PartitionCopy()
                try await bobApp.sync(bobUser, into: &bobCopy) { $0.bodies[key("User", bob.userID)] != nil }
                for n in 0..<20 {
                    let room = "r\(n)-\(UUID().uuidString.prefix(6).lowercased())"
                    let created = try await annApp.upload(
                        [.arrayAppend(key("User", ann.userID), path: path("conversations"),
                                      value: RChatHarness.conversation(room, name: "Room \(n)", creator: "ann@example.com", members: ["bob@example.com"]))],
                        to: annUser, requestId: "create-\(n)")
                    #expect(created.isAck)
                    try await bobApp.sync(bobUser, into: &bobCopy) { $0.unreadCount(user: bob.userID, conversation: room) == 0 }
                    // Ann's second device comes and goes around the message.
                    let other = try await server.connect(token: ann.accessToken)
                    _ = try await other.next()
                    let sent = try await annApp.upload(
                        [RChatHarness.message("m-\(room)", in: room, author: "ann@example.com", text: "hi \(n)")],
                        to: RChatPartitions.conversation(room), requestId: "m-\(n)")
                    #expect(sent.isAck)
                    await other.close()
                    do {
                        try await bobApp.sync(bobUser, into: &bobCopy, timeout: .seconds(15)) {
                            $0.unreadCount(user: bob.userID, conversation: room) == 1
                        }
                    } catch {
                        Issue.record("room \(n): the count never arrived (\(bobCopy.unreadCount(user: bob.userID, conversation: room).map(String.init) ?? "none"))\n\(try await db.diagnosis(collection: "User", field: "conversations"))")
                        return
                    }
                }
                await annApp.close()
                await bobApp.close()
            }
        }
    }
}
