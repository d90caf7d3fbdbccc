import Foundation
import PartitionSync
import SyncTesting
import Testing
import TouchWiki
import TouchWikiClient

/// TouchWiki's client on the SDK against a real server: drafts that stay on their device
/// until published, a page watched live, and access that ends.
@Suite("TouchWiki client", .timeLimit(.minutes(30)))
struct SessionTests {
    @Test("Bob's draft stays on his device (also across a restart of his client) until he publishes it; Ann's watch then shows it; removed, Bob's watch ends")
    func drafts() async throws {
        let home = NSTemporaryDirectory() + "touchwiki-session-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: home) }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db, application: .touchWiki) { server in
                let url = try #require(URL(string: server.baseURL))
                let ann = try TouchWikiSession(server: url, home: home + "/ann")
                try await ann.client.register(email: "ann@example.com", password: "correct horse battery")
                let annRuns = Task { await ann.client.run() }
                defer { annRuns.cancel() }

                let wiki = try await ann.createWiki(title: "Mobile Dev")
                try await ann.setMember("bob@example.com", of: wiki, adding: true, wait: .seconds(10))
                try await ann.saveDraft("# Home\nShared. See [[Sync Client]].", page: "Home", of: wiki)
                try await ann.publish("Home", of: wiki)
                #expect(await ann.client.waitUntilUploaded(timeout: .seconds(20)))

                // Bob signs up and writes a draft offline; then his client restarts: the draft is still his.
                do {
                    let bob = try TouchWikiSession(server: url, home: home + "/bob")
                    try await bob.client.register(email: "bob@example.com", password: "correct horse battery")
                    try await bob.saveDraft("# Sync Client\nBob's words.", page: "Sync Client", of: wiki)
                }
                let bob = try TouchWikiSession(server: url, home: home + "/bob")
                let bobRuns = Task { await bob.client.run() }
                defer { bobRuns.cancel() }
                #expect(try await TestTriggers.eventually { try await bob.wikis(wait: .seconds(5)).map(\.id) == [wiki] })
                #expect(try await bob.drafts().map(\.page) == ["Sync Client"])
                let homePage = try #require(try await bob.page("Home", of: wiki, wait: .seconds(10)))
                #expect(homePage.links == ["Sync Client"])
                #expect(try await bob.wiki(of: homePage)?.title == "Mobile Dev")
                let contents = try await bob.contents(of: wiki, wait: .seconds(10))
                #expect(contents.wiki?._id == wiki)
                #expect(contents.pages.map(\.name) == ["Home", "Sync Client"])   // his draft among them
                #expect(try await bob.page(homePage.links[0], of: wiki, wait: .seconds(10))?.markdown == "# Sync Client\nBob's words.")

                // Ann watches the page: absent, for the server has no such page, and her device no draft.
                var watched = try await ann.watch("Sync Client", of: wiki).makeAsyncIterator()
                #expect(await watched.next() == .page(nil))
                #expect(try await db.object(WikiPage.self, id: WikiPage.id(wiki: wiki, name: "Sync Client")) == nil)

                try await bob.publish("Sync Client", of: wiki)
                #expect(try await bob.drafts().isEmpty)
                let shown = await watched.next()
                guard case .page(let page) = shown else { Issue.record("ann's watch saw \(String(describing: shown))"); return }
                #expect(page?.markdown == "# Sync Client\nBob's words.")

                // Ann removes Bob; his watch ends with the server's reason.
                var bobWatches = try await bob.watch("Home", of: wiki).makeAsyncIterator()
                guard case .page(let first) = await bobWatches.next() else { Issue.record("bob's watch began with something else"); return }
                #expect(first?.name == "Home")
                try await ann.setMember("bob@example.com", of: wiki, adding: false, wait: .seconds(10))
                var last: TouchWikiSession.PageChange?
                while let change = await bobWatches.next() { last = change }
                #expect(last == .accessEnded(.permissionRevoked))
            }
        }
    }
}
