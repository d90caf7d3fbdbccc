import Foundation
import RChat
import RChatModel
import SyncClient
import SyncProtocol
import SyncTesting
import Testing

/// `PartitionHandle.query`: a filtered, sorted live view that emits only when its result changes.
@Suite("Live queries", .timeLimit(.minutes(30)))
struct LiveQueryTests {
    @Test("a live query emits its result at once, then only when a write changes it, in its order")
    func emitsOnlyChanges() async throws {
        let harness = ClientHarness()
        defer { harness.cleanUp() }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, application: RChat.application) { server in
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
                    let conversation = Conversation(
                        id: "c-query", displayName: "Query", members: [Member(userName: ann.userName, membershipStatus: .active)])
                    try await me.write([.arrayAppend(try ann.objectKey, path: try Path(parsing: "conversations"), value: try JSONValue(encoding: conversation))])
                    #expect(await client.waitUntilUploaded(timeout: .seconds(10)))
                    let room = try await client.open(RChatPartitions.conversation(conversation.id))

                    let start = Date(timeIntervalSince1970: 1_800_000_000)
                    func message(_ id: String, _ text: String, at seconds: Double) -> ChatMessage {
                        ChatMessage(_id: id, conversationID: conversation.id, author: ann.userName, text: text, timestamp: start + seconds)
                    }
                    let tagged = room.query(ChatMessage.self, where: { $0.text.contains("#q") }, sortedBy: \.timestamp)
                    var results = tagged.makeAsyncIterator()
                    #expect(try await results.next()?.map(\.text) == [])

                    // Writes that leave the result as it was emit nothing: each next result is
                    // the one of the write after them.
                    try await room.put(message("a", "plain", at: 0))
                    try await room.put(message("c", "#q later", at: 20))
                    #expect(try await results.next()?.map(\.text) == ["#q later"])
                    try await room.put(message("a", "still plain", at: 0))
                    #expect(await client.waitUntilUploaded(timeout: .seconds(10)))  // acks change pendingWrites only
                    try await room.put(message("b", "#q earlier", at: 10))
                    #expect(try await results.next()?.map(\.text) == ["#q earlier", "#q later"])
                    try await room.put(message("c", "untagged", at: 20))
                    #expect(try await results.next()?.map(\.text) == ["#q earlier"])

                    // A second iteration of the same query starts from the current result.
                    var again = tagged.makeAsyncIterator()
                    #expect(try await again.next()?.map(\._id) == ["b"])
                }
            }
        }
    }
}
