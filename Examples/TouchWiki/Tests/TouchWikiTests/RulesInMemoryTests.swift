import Foundation
import PartitionSync
import SyncTesting
import Testing
import TouchWiki

/// TouchWiki's rule and validator tested in-process, on the test kit's in-memory objects: no
/// database, no server (the end-to-end tests beside these run the same decisions through a
/// real server).
@Suite("TouchWiki rule and validator in memory")
struct RulesInMemoryTests {
    let permissions = TouchWiki.application.permissions
    let objects = InMemoryObjects()

    init() {
        objects.addAccount(userID: "u-ann", email: "ann@example.com")
        objects.addAccount(userID: "u-bob", email: "Bob@example.com")
        objects.addAccount(userID: "u-eve", email: "eve@example.com")
    }

    @Test("a wiki admits its owner and members, exactly; one not created yet may be written (to create it), not read")
    func wikiRule() async throws {
        let wiki = try TouchWikiPartitions.wiki("w1")
        let context = PermissionContext(source: objects)
        #expect(try await !permissions.canRead(.user("u-ann"), wiki, context: context))
        #expect(try await permissions.canWrite(.user("u-ann"), wiki, context: context))

        try objects.put(Wiki(id: "w1", title: "Recipes", owner: "ann@example.com", members: ["bob@example.com"]), in: wiki)
        for (user, admitted) in [("u-ann", true), ("u-bob", true), ("u-eve", false)] {
            #expect(try await permissions.canRead(.user(user), wiki, context: context) == admitted, "\(user)")
            #expect(try await permissions.canWrite(.user(user), wiki, context: context) == admitted, "\(user)")
        }
    }

    @Test("a new wiki names its writer as owner; a page's wiki must exist")
    func validator() async throws {
        let wiki = try TouchWikiPartitions.wiki("w1")
        let context = ValidationContext(source: objects)
        let own = try ObjectChange.creation(of: Wiki(id: "w1", title: "Recipes", owner: "ann@example.com"), in: wiki)
        try await permissions.check(own, in: wiki, by: .user("u-ann"), context: context)
        await #expect(throws: SyncError.self) { try await permissions.check(own, in: wiki, by: .user("u-eve"), context: context) }

        let page = try ObjectChange.creation(of: WikiPage(wiki: "w1", name: "Bread", markdown: "Flour, water."), in: wiki)
        await #expect(throws: SyncError.self) { try await permissions.check(page, in: wiki, by: .user("u-ann"), context: context) }
        try objects.put(Wiki(id: "w1", title: "Recipes", owner: "ann@example.com"), in: wiki)
        try await permissions.check(page, in: wiki, by: .user("u-ann"), context: context)
    }

}
