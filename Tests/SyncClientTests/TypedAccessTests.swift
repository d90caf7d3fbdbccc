import Foundation
import PartitionSync
import RChat
import RChatModel
import SyncClient
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// The example of docs/CLIENT.md, step by step, against a server serving RChat.
@Suite("Typed models (the docs/CLIENT.md example)", .timeLimit(.minutes(30)))
struct TypedAccessTests {
    @Test("RChat models read, written with put, observed, and a room marked read")
    func documentedExample() async throws {
        let harness = ClientHarness()
        defer { harness.cleanUp() }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, application: RChat.application) { server in
                let bob = try harness.client(server.baseURL, store: "bob")
                try await bob.register(email: "bob@example.com", password: "correct horse battery")
                let client = try harness.client(server.baseURL, store: "ann")
                let userID = try await client.register(email: "ann@example.com", password: "correct horse battery")
                try await ClientHarness.running(client) {
                    let me = try await client.open(RChatPartitions.user(userID))
                    var user: User?
                    for await snapshot in await me.updates() {
                        user = try snapshot.objects(User.self).first
                        if user != nil { break }
                    }
                    let ann = try #require(user)
                    #expect(ann.userName == "ann@example.com")
                    #expect(try await me.object(User.self, id: userID)?.userName == "ann@example.com")

                    // A conversation with Bob, as RChat's app makes it.
                    let conversation = Conversation(
                        id: "c-docs", displayName: "Docs",
                        members: [Member(userName: ann.userName, membershipStatus: .active), Member(userName: "bob@example.com")])
                    try await me.write([.arrayAppend(try ann.objectKey, path: try Path(parsing: "conversations"), value: try JSONValue(encoding: conversation))])
                    #expect(await client.waitUntilUploaded(timeout: .seconds(10)))

                    let room = try await client.open(RChatPartitions.conversation(conversation.id))
                    let message = ChatMessage(conversationID: conversation.id, author: ann.userName, text: "hi all")
                    try await room.put(message)
                    // Shown at once, typed, before the server has it.
                    #expect(try await room.objects(ChatMessage.self).map(\.text) == ["hi all"])
                    #expect(await client.waitUntilUploaded(timeout: .seconds(10)))
                    let stored = try #require(try await db.store().body(of: message.objectKey))
                    #expect(stored["text"] == "hi all")
                    #expect(stored["partition"] == .string(RChatPartitions.conversation(conversation.id).description))

                    // The unread trigger counts it; marking the room read sets the count back to 0.
                    var counted = false
                    for await snapshot in await me.updates() {
                        if try snapshot.objects(User.self).first?.conversations.first?.unreadCount == 1 {
                            counted = true
                            break
                        }
                    }
                    #expect(counted)
                    try await me.write([.set(try ann.objectKey, path: try Path(parsing: "conversations[id=c-docs].unreadCount"), value: 0)])
                    #expect(try await me.object(User.self, id: userID)?.conversations.first?.unreadCount == 0)
                    #expect(await client.waitUntilUploaded(timeout: .seconds(10)))

                    // A put of a changed model sets its fields (the server keeps _id and partition).
                    var edited = message
                    edited.text = "hi everyone"
                    try await room.put(edited)
                    #expect(await client.waitUntilUploaded(timeout: .seconds(10)))
                    #expect(try await db.store().body(of: message.objectKey)?["text"] == "hi everyone")
                }
            }
        }
    }
}
