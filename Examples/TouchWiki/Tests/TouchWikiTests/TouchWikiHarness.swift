import PartitionSync
import SyncTesting
import TouchWiki

/// A TouchWiki server on a fresh database, and its users as WebSocket clients: the test kit's
/// `TestApplication`, with what TouchWiki's tests share.
typealias TouchWikiHarness = TestApplication

extension TestApplication {
    /// Runs `body` with a TouchWiki server on a new database.
    static func with(_ body: @escaping @Sendable (TestApplication) async throws -> Void) async throws {
        try await with(.touchWiki, body)
    }

    /// Registers `email` and connects a client; waits until the server has made their list.
    func user(_ email: String) async throws -> User {
        try await user(email) { db, user in try await db.object(WikiList.self, id: user.id) != nil }
    }

    /// Waits until the stored wiki list of `user` satisfies `condition`.
    func list(of user: User, where condition: @Sendable @escaping ([String]) -> Bool) async throws -> Bool {
        try await TestTriggers.eventually { condition(try await db.object(WikiList.self, id: user.id)?.wikis.map(\.id) ?? []) }
    }
}

extension TestApplication.User {
    /// Puts documents into a wiki's partition.
    func put(_ models: any SyncModel..., in wiki: String) async throws -> ServerMessage {
        try await upload(models.map { try $0.putOperation() }, to: try TouchWikiPartitions.wiki(wiki))
    }

    /// Creates a wiki owned by this user.
    func createWiki(_ id: String, title: String = "Mobile Dev", members: [String]? = nil) async throws -> ServerMessage {
        try await put(Wiki(id: id, title: title, owner: email, members: members), in: id)
    }

    /// Sets a wiki's members (a put of that field only).
    func setMembers(_ members: [String], of wiki: String) async throws -> ServerMessage {
        let key = try ObjectKey(collection: Wiki.collection, id: wiki)
        return try await upload([.put(key, body: ["members": .array(members.map(JSONValue.string))])], to: try TouchWikiPartitions.wiki(wiki))
    }

    /// Writes a page.
    func writePage(_ name: String, in wiki: String, markdown: String) async throws -> ServerMessage {
        try await put(WikiPage(wiki: wiki, name: name, markdown: markdown), in: wiki)
    }
}
