import Foundation
import PartitionSync
import SyncTesting
import Testing
import TouchWiki

/// Members are named by email, so a member is whoever proved that address (docs/SECURITY.md,
/// "Identity"; issue 29, finding 6): an owner names a person before they have an account, and
/// a stranger who registers that address first gets nothing.
@Suite("TouchWiki verified members", .timeLimit(.minutes(30)))
struct VerifiedMemberTests {
    @Test("a stranger who registers a named member's email without proving it neither reads the wiki nor gets it listed; the owner of the address, once verified, does")
    func squatterGetsNothing() async throws {
        try await SMTPSink.with { sink in
            try await TestDatabase.with { db in
                try await TestServer.with(database: db, application: .touchWiki, verifyingEmailsAt: sink) { server in
                    let app = TouchWikiHarness(server: server, db: db)
                    let annTokens = try await server.register("ann@example.com")
                    try await server.verifyEmail(token: annTokens.accessToken, sink: sink)
                    #expect(try await TestTriggers.eventually { try await db.object(WikiList.self, id: annTokens.userID) != nil })
                    let ann = TouchWikiHarness.User(email: "ann@example.com", tokens: annTokens, client: try await server.connect(token: annTokens.accessToken))
                    // Ann names someone who has no account yet.
                    #expect(try await ann.createWiki("w1", members: ["someone@example.com"]).isAck)
                    #expect(try await ann.writePage("Home", in: "w1", markdown: "Plans.").isAck)

                    // Mallory registers that address first, and cannot prove it.
                    let mallory = try await server.register("someone@example.com")
                    let client = try await server.connect(token: mallory.accessToken)
                    guard case .failure(let denied) = try await client.subscribe(try TouchWikiPartitions.wiki("w1")) else {
                        Issue.record("an unverified account read the wiki that names its email")
                        return
                    }
                    #expect(denied.code == .permissionDenied)
                    #expect(try await server.http.get("/v1/partitions/wiki%3Dw1/changes", token: mallory.accessToken).status == 403)
                    #expect(try await db.object(WikiList.self, id: mallory.userID) == nil)

                    // Bob proves his address; named then, he is a member.
                    let bobTokens = try await server.register("bob@example.com")
                    try await server.verifyEmail(token: bobTokens.accessToken, sink: sink)
                    #expect(try await ann.setMembers(["someone@example.com", "bob@example.com"], of: "w1").isAck)
                    let bob = try await server.connect(token: bobTokens.accessToken)
                    guard case .success = try await bob.subscribe(try TouchWikiPartitions.wiki("w1")) else {
                        Issue.record("a verified member cannot read the wiki")
                        return
                    }
                    #expect(try await app.list(of: TouchWikiHarness.User(email: "bob@example.com", tokens: bobTokens, client: bob)) { $0 == ["w1"] })
                }
            }
        }
    }
}
