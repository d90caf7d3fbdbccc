import Foundation
import PartitionSync
import SyncTesting
import Testing
import TouchWiki

/// Who reads and writes a wiki: its owner and members, exactly while the wiki lists them.
@Suite("TouchWiki access", .timeLimit(.minutes(30)))
struct AccessTests {
    @Test("outsiders neither read nor write a wiki; members read and write its pages but change neither its members nor its existence")
    func access() async throws {
        try await TouchWikiHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let bob = try await app.user("bob@example.com")
            let eve = try await app.user("eve@example.com")
            #expect(try await ann.createWiki("w1", members: [bob.email]).isAck)
            #expect(try await ann.writePage("Home", in: "w1", markdown: "Welcome. See [[Sync Client]].").isAck)
            let wiki = try TouchWikiPartitions.wiki("w1")

            // Eve, who is not a member: nothing to read, nothing to write, over WebSocket or HTTP.
            guard case .failure(let denied) = try await eve.client.subscribe(wiki) else { Issue.record("eve read the wiki"); return }
            #expect(denied.code == .permissionDenied)
            #expect(try await eve.writePage("Home", in: "w1", markdown: "defaced").rejectionCode == .permissionDenied)
            #expect(try await eve.setMembers([bob.email, eve.email], of: "w1").rejectionCode == .permissionDenied)
            #expect(try await app.server.http.get("/v1/partitions/wiki%3Dw1/changes", token: eve.tokens.accessToken).status == 403)

            // Bob, a member, reads the wiki and writes pages.
            guard case .success(let copy) = try await bob.client.subscribe(wiki) else { Issue.record("bob cannot read the wiki"); return }
            #expect(copy.objects.keys.contains(try ObjectKey(collection: WikiPage.collection, id: "w1:Home")))
            #expect(try await bob.writePage("Sync Client", in: "w1", markdown: "It syncs.").isAck)
            #expect(try await bob.upload([.delete(try ObjectKey(collection: WikiPage.collection, id: "w1:Sync Client"))], to: wiki).isAck)

            // ... but lets nobody in, takes the wiki over, or deletes it.
            #expect(try await bob.setMembers([bob.email, eve.email], of: "w1").rejectionCode == .validationFailed)
            let wikiKey = try ObjectKey(collection: Wiki.collection, id: "w1")
            #expect(try await bob.upload([.set(wikiKey, path: .field("owner_id"), value: .string(bob.email))], to: wiki).rejectionCode == .validationFailed)
            #expect(try await bob.upload([.delete(wikiKey)], to: wiki).rejectionCode == .validationFailed)
            // Members may retitle it.
            #expect(try await bob.upload([.set(wikiKey, path: .field("title"), value: "Mobile Development")], to: wiki).isAck)

            // Wiki lists: each user's own, listing the wikis that admit them.
            #expect(try await app.list(of: ann) { $0 == ["w1"] })
            #expect(try await app.list(of: bob) { $0 == ["w1"] })
            #expect(try await app.list(of: eve) { $0.isEmpty })
            guard case .failure(let other) = try await eve.client.subscribe(try TouchWikiPartitions.user(bob.id)) else {
                Issue.record("eve read bob's wiki list"); return
            }
            #expect(other.code == .permissionDenied)
            #expect(try await bob.upload([try WikiList(userID: bob.id).putOperation()], to: try TouchWikiPartitions.user(bob.id)).rejectionCode == .permissionDenied)
        }
    }

    @Test("a member removed loses their open subscription at once (permission_revoked), their writes, and the wiki in their list")
    func removal() async throws {
        try await TouchWikiHarness.with { app in
            let ann = try await app.user("ann@example.com")
            let bob = try await app.user("bob@example.com")
            #expect(try await ann.createWiki("w1", members: [bob.email]).isAck)
            let wiki = try TouchWikiPartitions.wiki("w1")
            guard case .success = try await bob.client.subscribe(wiki) else { Issue.record("bob cannot read the wiki"); return }
            #expect(try await app.list(of: bob) { $0 == ["w1"] })

            #expect(try await ann.setMembers([], of: "w1").isAck)
            let ended = try await bob.client.next(timeout: .seconds(10)) { message in
                if case .unsubscribed = message { return true }
                return false
            }
            #expect(ended == .unsubscribed(partition: wiki, code: .permissionRevoked))
            #expect(try await bob.writePage("Home", in: "w1", markdown: "still here?").rejectionCode == .permissionDenied)
            #expect(try await app.list(of: bob) { $0.isEmpty })
            #expect(try await app.list(of: ann) { $0 == ["w1"] })
        }
    }
}
