import Foundation
import PartitionSync
import SyncTesting
import Testing
import TouchWiki

/// TouchWiki's trigger handlers run in-process on the test kit's in-memory objects, given the
/// events the server would record (no database, no server); the end-to-end tests beside these
/// run them through a real server.
@Suite("TouchWiki triggers in memory")
struct TriggersInMemoryTests {
    let objects = InMemoryObjects()
    var context: TriggerContext { TriggerContext(transaction: objects, trigger: "test") }

    init() {
        objects.addAccount(userID: "u-ann", email: "ann@example.com")
        objects.addAccount(userID: "u-bob", email: "bob@example.com")
    }

    /// Applies a client's put of `wiki` and hands its event to the wiki-list trigger.
    func write(_ wiki: Wiki, by author: String) async throws {
        let partition = try TouchWikiPartitions.wiki(wiki._id)
        for change in try await context.save(wiki, in: partition) {
            let event = ChangeEvent.object(change, in: partition, author: author)
            if TouchWikiTriggers.wikiLists.matches(event) { try await TouchWikiTriggers.wikiLists.handler(event, context) }
        }
    }

    func wikis(of userID: String) async throws -> [String] {
        try await context.object(WikiList.self, id: userID)?.wikis.map(\.id) ?? []
    }

    @Test("a wiki's owner and members find it in their lists, and lose it when they leave it")
    func wikiLists() async throws {
        var wiki = Wiki(id: "w1", title: "Recipes", owner: "ann@example.com", members: ["bob@example.com", "nobody@example.com"])
        try await write(wiki, by: "u-ann")
        #expect(try await wikis(of: "u-ann") == ["w1"])
        #expect(try await wikis(of: "u-bob") == ["w1"])

        wiki.members = []
        try await write(wiki, by: "u-ann")
        #expect(try await wikis(of: "u-ann") == ["w1"])
        #expect(try await wikis(of: "u-bob") == [])
    }

    @Test("a deleted account leaves every wiki: one it owned passes to its first member, or goes when it has none")
    func deletedAccount() async throws {
        try objects.put(Wiki(id: "shared", title: "Shared", owner: "ann@example.com", members: ["bob@example.com"]), in: try TouchWikiPartitions.wiki("shared"))
        try objects.put(Wiki(id: "alone", title: "Alone", owner: "ann@example.com"), in: try TouchWikiPartitions.wiki("alone"))
        try objects.put(Wiki(id: "bobs", title: "Bob's", owner: "bob@example.com", members: ["ann@example.com"]), in: try TouchWikiPartitions.wiki("bobs"))
        try await TouchWikiTriggers.accounts.handler(.user(.registered, userID: "u-ann", email: "ann@example.com"), context)
        #expect(try await wikis(of: "u-ann").sorted() == ["alone", "bobs", "shared"])

        try await TouchWikiTriggers.accounts.handler(.user(.deleted, userID: "u-ann", email: "ann@example.com"), context)

        #expect(try await context.object(WikiList.self, id: "u-ann") == nil)
        let shared = try #require(try await context.object(Wiki.self, id: "shared"))
        #expect(shared.owner_id == "bob@example.com" && shared.members == [])
        #expect(try await context.object(Wiki.self, id: "alone") == nil)
        #expect(try await context.object(Wiki.self, id: "bobs")?.members == [])
    }

    @Test("a user's change is stamped with the server's time; the stamp, a trigger's write, is not stamped again")
    func timestamps() async throws {
        let partition = try TouchWikiPartitions.wiki("w1")
        let changes = try await context.save(Wiki(id: "w1", title: "Recipes", owner: "ann@example.com"), in: partition)
        let written = Date(timeIntervalSince1970: 1_800_000_000)
        var event = ChangeEvent.object(try #require(changes.first), in: partition, author: "u-ann")
        event.created = written
        #expect(TouchWikiTriggers.timestamps.matches(event))

        try await TouchWikiTriggers.timestamps.handler(event, context)

        let body = try #require(try await context.body(of: ObjectKey(collection: Wiki.collection, id: "w1")))
        #expect(body["updated_at"] == .string(JSONValue.iso8601(written)))
        #expect(body["created_at"] == body["updated_at"])
        event.depth = 1
        #expect(!TouchWikiTriggers.timestamps.matches(event))
    }
}
