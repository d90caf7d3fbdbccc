import Foundation
import PartitionSync
import SyncTesting
import Testing
import TouchWiki

/// What may be written: the seed's document shapes, and the server's timestamps.
@Suite("TouchWiki validation", .timeLimit(.minutes(30)))
struct ValidationTests {
    @Test("a new wiki names its writer as owner and lives in its own partition; a page's id, wiki_id and partition agree, in a wiki that exists")
    func shapes() async throws {
        try await TouchWikiHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let bob = try await app.user("bob@example.com")
            // Bob cannot make a wiki in Ann's name, nor one outside its partition.
            #expect(try await bob.put(Wiki(id: "w1", title: "Mobile Dev", owner: ann.email), in: "w1").rejectionCode == .validationFailed)
            #expect(try await ann.put(Wiki(id: "w2", title: "Mobile Dev", owner: ann.email), in: "w1").rejectionCode == .validationFailed)
            #expect(try await ann.put(Wiki(id: "w1", title: "", owner: ann.email), in: "w1").rejectionCode == .validationFailed)
            // A page of a wiki that does not exist is refused, and takes nothing with it...
            #expect(try await ann.writePage("Home", in: "w1", markdown: "early").rejectionCode == .validationFailed)
            // ... but comes in the same upload as its wiki.
            let both = try await ann.put(Wiki(id: "w1", title: "Mobile Dev", owner: ann.email), WikiPage(wiki: "w1", name: "Home", markdown: "hi"), in: "w1")
            #expect(both.isAck, "\(both)")

            var page = WikiPage(wiki: "w1", name: "Other", markdown: "x")
            page.wiki_id = Reference("w2")
            #expect(try await ann.put(page, in: "w1").rejectionCode == .validationFailed)
            #expect(try await ann.put(WikiPage(wiki: "w2", name: "Other", markdown: "x"), in: "w1").rejectionCode == .validationFailed)
            for bad in ["", " Padded", "With [[brackets]]", String(repeating: "n", count: WikiPage.maximumNameLength + 1)] {
                #expect(try await ann.writePage(bad, in: "w1", markdown: "x").rejectionCode == .validationFailed, "page name \(bad.debugDescription)")
            }
            #expect(try await ann.writePage(String(repeating: "n", count: WikiPage.maximumNameLength), in: "w1", markdown: "x").isAck)
            // A page is a page: its type says so.
            let key = try ObjectKey(collection: WikiPage.collection, id: "w1:Typed")
            #expect(try await ann.upload([.put(key, body: ["type": "wiki", "wiki_id": "w1"])], to: try TouchWikiPartitions.wiki("w1")).rejectionCode == .validationFailed)
            // And a wiki partition holds wikis and pages only.
            let stray = try ObjectKey(collection: "note", id: "n1")
            #expect(try await ann.upload([.put(stray, body: ["text": "x"])], to: try TouchWikiPartitions.wiki("w1")).rejectionCode == .validationFailed)
            #expect(try await app.db.object(WikiPage.self, id: "w1:Typed") == nil)
        }
    }

    @Test("a wiki id has no colon, so another user cannot take the ids of a wiki's pages (issue 29, finding 5)")
    func colonInWikiID() async throws {
        try await TouchWikiHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let mallory = try await app.user("mallory@example.com")
            #expect(try await ann.put(Wiki(id: "W", title: "Mine", owner: ann.email), in: "W").isAck)
            // Mallory's wiki `W:Notes` with a page `Home` would hold the id `W:Notes:Home`.
            let squat = try await mallory.put(
                Wiki(id: "W:Notes", title: "Squat", owner: mallory.email), WikiPage(wiki: "W:Notes", name: "Home", markdown: "x"), in: "W:Notes")
            #expect(squat.rejectionCode == .validationFailed, "\(squat)")
            #expect(try await app.db.object(Wiki.self, id: "W:Notes") == nil)
            // So Ann's page `Notes:Home` in `W` is hers to write.
            #expect(try await ann.writePage("Notes:Home", in: "W", markdown: "mine").isAck)
        }
    }

    @Test("created_at and updated_at are the server's: set on each user's change, refused from clients")
    func timestamps() async throws {
        try await TouchWikiHarness.with { app in
            let ann = try await app.user("ann@example.com")
            #expect(try await ann.createWiki("w1").isAck)
            #expect(try await ann.writePage("Home", in: "w1", markdown: "one").isAck)
            #expect(try await TestTriggers.eventually { try await app.db.object(WikiPage.self, id: "w1:Home")?.updated_at != nil })
            let first = try #require(try await app.db.object(WikiPage.self, id: "w1:Home"))
            #expect(first.created_at == first.updated_at)
            #expect(try await app.db.object(Wiki.self, id: "w1")?.created_at != nil)

            // A client that sets either is refused, whether it makes the page or changes it.
            var forged = WikiPage(wiki: "w1", name: "Forged", markdown: "x")
            forged.updated_at = Date(timeIntervalSince1970: 0)
            #expect(try await ann.put(forged, in: "w1").rejectionCode == .validationFailed)
            var backdated = first
            backdated.created_at = Date(timeIntervalSince1970: 0)
            #expect(try await ann.put(backdated, in: "w1").rejectionCode == .validationFailed)
            // Putting the page with the timestamps it has changes neither.
            var edited = first
            edited.markdown = "two"
            #expect(try await ann.put(edited, in: "w1").isAck)

            // The edit gets a later updated_at, and keeps its created_at.
            #expect(try await TestTriggers.eventually {
                let page = try await app.db.object(WikiPage.self, id: "w1:Home")
                return page?.markdown == "two" && page?.updated_at != first.updated_at
            })
            let second = try #require(try await app.db.object(WikiPage.self, id: "w1:Home"))
            #expect(second.created_at == first.created_at)
            #expect(try #require(second.updated_at) > (try #require(first.updated_at)))
            #expect(try await app.db.deadLetters().isEmpty)
        }
    }
}
