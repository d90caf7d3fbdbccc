import Foundation
import PartitionSync
import SyncTesting
import Testing
import TouchWiki

/// The two-user story, with the `touchwiki` terminal client as real processes talking to a
/// real server over WebSockets: the owner makes a wiki and adds a member; the member edits a
/// page as a draft that the owner does not see, then publishes it, and the owner, watching,
/// sees it; the owner removes the member, whose watch ends.
@Suite("TouchWiki story", .timeLimit(.minutes(30)))
struct StoryTests {
    @Test("owner and member, with the terminal client")
    func story() async throws {
        let home = NSTemporaryDirectory() + "touchwiki-story-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: home) }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db, application: .touchWiki) { server in
                let ann = TerminalClient(server: server.baseURL, home: home + "/ann")
                let bob = TerminalClient(server: server.baseURL, home: home + "/bob")
                _ = try await ann.succeed("register", "--email", "ann@example.com", "--password", "correct horse battery")
                _ = try await bob.succeed("register", "--email", "bob@example.com", "--password", "correct horse battery")

                // Ann makes a wiki, writes its home page and lets Bob in.
                let created = try await ann.succeed("create", "Mobile Dev")
                let wiki = try #require(created.split(separator: "(").last?.split(separator: ")").first.map(String.init), "\(created)")
                // A write the server refuses is reported with its code, and the command exits 1
                // (issue 34: it printed "Created" and exited 0).
                let refused = try await ann.run("create", String(repeating: "t", count: 201))
                #expect(refused.status == 1, "\(refused.output)")
                #expect(refused.output.contains("validation_failed") && !refused.output.contains("Created"), "\(refused.output)")
                _ = try await ann.succeed("edit", wiki, "Home", editing: "# Home\nWelcome. See [[Sync Client]].\n")
                #expect(try await ann.succeed("drafts").contains("\(wiki): Home"))
                _ = try await ann.succeed("publish", wiki, "Home")
                _ = try await ann.succeed("add-member", wiki, "bob@example.com")
                #expect(try await ann.succeed("members", wiki).contains("member: bob@example.com"))

                // Ann watches the home page.
                let annWatch = try ann.start(["watch", wiki, "Home"])
                defer { annWatch.stop() }
                #expect(try await TestTriggers.eventually { annWatch.output.contains("Welcome.") }, "\(annWatch.output)")

                // Bob finds the wiki in his list (by its title from here on) and edits the page: a draft.
                #expect(try await TestTriggers.eventually { try await bob.succeed("wikis").contains("Mobile Dev (\(wiki)), owned by ann@example.com") })
                let shown = try await bob.succeed("show", "Mobile Dev", "Home")
                #expect(shown.contains("== Mobile Dev › Home") && shown.contains("Welcome."), "\(shown)")
                let edited = try await bob.succeed("edit", "Mobile Dev", "Home", editing: "# Home\nBob was here. See [[Sync Client]].\n")
                // Its hint works when pasted into a shell (issue 34, finding 4).
                #expect(edited.contains("`touchwiki publish 'Mobile Dev' Home`"), "\(edited)")
                let bobsDraft = try await bob.succeed("show", "Mobile Dev", "Home")
                #expect(bobsDraft.contains("Bob was here.") && bobsDraft.contains("your draft"))
                let listed = try await bob.succeed("pages", "Mobile Dev")
                #expect(listed.contains("Mobile Dev, owned by ann@example.com") && listed.contains("Home (draft)"), "\(listed)")

                // Ann sees none of it: not on the server, not in her terminal.
                #expect(!(try await ann.succeed("show", wiki, "Home")).contains("Bob was here."))
                #expect(try await db.object(WikiPage.self, id: WikiPage.id(wiki: wiki, name: "Home"))?.markdown?.contains("Welcome.") == true)
                #expect(!annWatch.output.contains("Bob was here."))

                // Bob publishes; Ann's watch shows it.
                _ = try await bob.succeed("publish", "Mobile Dev", "Home")
                #expect(try await TestTriggers.eventually { annWatch.output.contains("Bob was here.") }, "\(annWatch.output)")
                #expect(try await bob.succeed("drafts").contains("No drafts."))
                // The link leads, by name, to a page nobody has written yet.
                #expect(try await bob.succeed("follow", "Mobile Dev", "Home", "1").contains("Sync Client: no such page yet"))

                // Ann removes Bob: his watch ends, saying why, and the wiki leaves his list.
                let bobWatch = try bob.start(["watch", wiki, "Home"])
                defer { bobWatch.stop() }
                #expect(try await TestTriggers.eventually { bobWatch.output.contains("Bob was here.") }, "\(bobWatch.output)")
                _ = try await ann.succeed("remove-member", wiki, "bob@example.com")
                #expect(await bobWatch.exit() == 3)
                #expect(bobWatch.output.contains("ended (permission_revoked)"))
                #expect(try await TestTriggers.eventually { try await bob.succeed("wikis").contains("No wikis yet") })
            }
        }
    }
}
