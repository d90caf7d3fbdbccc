import Logging
import SyncProtocol
import SyncStorage
import SyncTesting
import SyncTriggers
import Testing

/// The example of docs/TRIGGERS.md, as written there: if it stops working, so does the doc.
@Suite("Documentation example", .timeLimit(.minutes(8)))
struct DocumentationExampleTests {
    /// Counts the messages of every conversation in a `Stats` object of `stats=all`.
    let messageStats = Trigger(
        name: "stats.messages",
        collections: ["ChatMessage"],
        operations: [.insert],
        where: { event in event.after?["text"] != nil },
        mode: .ordered,
        retry: .init(attempts: 5, initialBackoff: .milliseconds(100))
    ) { event, context in
        let conversation = event.partition!.value
        let stats = try ObjectKey(collection: "Stats", id: conversation)
        try await context.apply([
            .put(stats, body: ["conversation": .string(conversation)]),
            .increment(stats, path: try Path(parsing: "messages"), by: 1),
        ], in: try Partition("stats=all"))
        context.logger.debug("counted a message")
    }

    @Test func countsMessages() async throws {
        let messageStats = self.messageStats
        try await TestDatabase.with { db in
            let store = db.store()
            try await TestTriggers.running(store, [messageStats]) {
                let room = try Partition("conversation=c-1")
                try await store.upload(Upload(partition: room, operations: [
                    .put(try ObjectKey(collection: "ChatMessage", id: "m-1"), body: ["text": "hi"]),
                ], principal: "alice"))
                #expect(try await TestTriggers.eventually {
                    try await store.body(of: try ObjectKey(collection: "Stats", id: "c-1"))?["messages"] == 1
                })
            }
        }
    }
}
