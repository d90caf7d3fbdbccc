import Foundation
import PartitionSync
import SyncTesting
import Testing
import TouchWiki

/// Wiki lists and accounts: whatever order members are added and accounts made, each user's
/// list ends equal to the wikis that admit them.
@Suite("TouchWiki accounts and lists", .timeLimit(.minutes(30)))
struct AccountTests {
    @Test("someone added before they sign up finds the wiki in their list; a deleted wiki leaves every list and takes its pages")
    func lists() async throws {
        try await TouchWikiHarness.with { app in
            let ann = try await app.user("ann@example.com")
            #expect(try await ann.createWiki("w1", title: "Beta", members: ["bob@example.com"]).isAck)
            #expect(try await ann.createWiki("w2", title: "Alpha").isAck)
            #expect(try await ann.writePage("Home", in: "w1", markdown: "hi").isAck)
            #expect(try await ann.writePage("Other", in: "w1", markdown: "there").isAck)
            #expect(try await app.list(of: ann) { $0 == ["w2", "w1"] })   // by title

            let bob = try await app.user("bob@example.com")
            #expect(try await app.list(of: bob) { $0 == ["w1"] })

            #expect(try await ann.upload([.delete(try ObjectKey(collection: Wiki.collection, id: "w1"))], to: try TouchWikiPartitions.wiki("w1")).isAck)
            // Bob, who knows the id, cannot make the wiki again and own what is left of its pages.
            #expect(try await bob.createWiki("w1", title: "Mine now").rejectionCode == .validationFailed)
            #expect(try await app.list(of: bob) { $0.isEmpty })
            #expect(try await app.list(of: ann) { $0 == ["w2"] })
            #expect(try await TestTriggers.eventually { try await app.db.objects(WikiPage.self, in: try TouchWikiPartitions.wiki("w1")).isEmpty })
            #expect(try await app.db.deadLetters().isEmpty)
        }
    }

    @Test("a deleted account leaves its wikis: one it owned passes to its first member, or goes when it has none")
    func deletedAccount() async throws {
        try await TouchWikiHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let bob = try await app.user("bob@example.com")
            #expect(try await ann.createWiki("shared", members: [bob.email]).isAck)
            #expect(try await ann.createWiki("alone").isAck)
            #expect(try await app.list(of: bob) { $0 == ["shared"] })

            let deleted = try await app.server.http.request("DELETE", "/v1/auth/user", body: nil, token: ann.tokens.accessToken)
            #expect(deleted.status == 204)
            #expect(try await TestTriggers.eventually { try await app.db.object(Wiki.self, id: "shared")?.owner_id == bob.email })
            #expect(try await app.db.object(Wiki.self, id: "shared")?.members == [])
            #expect(try await TestTriggers.eventually { try await app.db.object(Wiki.self, id: "alone") == nil })
            #expect(try await TestTriggers.eventually { try await app.db.object(WikiList.self, id: ann.id) == nil })
            #expect(try await app.list(of: bob) { $0 == ["shared"] })
            #expect(try await app.db.deadLetters().isEmpty)
        }
    }
}
