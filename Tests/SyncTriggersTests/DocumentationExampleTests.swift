import PartitionSync
import SyncTesting
import Testing

// The examples of docs/TRIGGERS.md, as written there (DocsTests checks that each block of
// the doc stands here verbatim): if they stop working, so does the doc.

/// Counts the messages of every conversation in a `Stats` object of `stats=all`.
let messageStats = Trigger(
    name: "stats.messages",                  // stored with its position: do not rename lightly
    collections: ["ChatMessage"],
    operations: [.insert],
    where: { event in event.after?["text"] != nil },
    mode: .ordered,                          // the default
    retry: .init(attempts: 5, initialBackoff: .milliseconds(100))
) { event, context in
    let conversation = event.partition!.value
    let stats = try ObjectKey(collection: "Stats", id: conversation)
    try await context.apply([
        .put(stats, body: ["conversation": .string(conversation)]),   // creates it the first time
        .increment(stats, path: .field("messages"), by: 1),
    ], in: try Partition("stats=all"))
    context.logger.debug("counted a message")
}

let roomActivity = Trigger(
    name: "stats.room-activity", collections: ["ChatMessage"], operations: [.insert],
    gathering: .milliseconds(100)
) { events, context in
    var counts: [String: Int64] = [:]
    for event in events { counts[event.partition!.value, default: 0] += 1 }
    for (room, count) in counts {
        let stats = try ObjectKey(collection: "Stats", id: room)
        try await context.apply([
            .put(stats, body: ["conversation": .string(room)]),
            .increment(stats, path: .field("messages"), by: .int(count)),
        ], in: try Partition("stats=all"))
    }
}

@Suite("Documentation example", .timeLimit(.minutes(30)))
struct DocumentationExampleTests {
@Test func countsMessages() async throws {
    try await TestDatabase.with { db in
        try await TestTriggers.running(db, [messageStats]) {
            try await db.apply([
                .put(try ObjectKey(collection: "ChatMessage", id: "m-1"), body: ["text": "hi"]),
            ], in: try Partition("conversation=c-1"), as: .user("alice"))
            #expect(try await TestTriggers.eventually {
                try await db.body(of: try ObjectKey(collection: "Stats", id: "c-1"))?["messages"] == 1
            })
        }
    }
}

    @Test("the run handler of the doc counts a run of messages at once")
    func countsRuns() async throws {
        try await TestDatabase.with { db in
            try await TestTriggers.running(db, [roomActivity]) {
                let room = try Partition("conversation=c-2")
                for n in 0..<3 {
                    try await db.apply([.put(try ObjectKey(collection: "ChatMessage", id: "m-\(n)"), body: ["text": "hi"])], in: room)
                }
                #expect(try await TestTriggers.eventually {
                    try await db.body(of: try ObjectKey(collection: "Stats", id: "c-2"))?["messages"] == 3
                })
            }
        }
    }
}
