import Foundation
import PartitionSync
import SyncTesting
import Testing
import TouchWiki

/// A TouchWiki server on a fresh database, and its users as WebSocket clients.
struct TouchWikiHarness {
    let server: TestServer
    let db: TestDatabase

    /// Runs `body` with a TouchWiki server on a new database.
    static func with(_ body: @escaping @Sendable (TouchWikiHarness) async throws -> Void) async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db, application: .touchWiki) { server in
                try await body(TouchWikiHarness(server: server, db: db))
            }
        }
    }

    /// A registered user with a connected WebSocket client.
    struct User {
        let email: String
        let tokens: TestHTTPClient.Tokens
        let client: TestSyncClient
        var id: String { tokens.userID }
    }

    /// Registers `email` and connects a client; waits until the server has made their list.
    func user(_ email: String) async throws -> User {
        let tokens = try await server.register(email)
        let client = try await server.connect(token: tokens.accessToken)
        #expect(try await TestTriggers.eventually { try await db.object(WikiList.self, id: tokens.userID) != nil })
        return User(email: email, tokens: tokens, client: client)
    }

    /// Waits until the stored wiki list of `user` satisfies `condition`.
    func list(of user: User, where condition: @Sendable @escaping ([String]) -> Bool) async throws -> Bool {
        try await TestTriggers.eventually { condition(try await db.object(WikiList.self, id: user.id)?.wikis.map(\.id) ?? []) }
    }
}

extension TouchWikiHarness.User {
    /// Uploads operations and returns the answer.
    func upload(_ operations: [SyncOperation], to partition: Partition) async throws -> ServerMessage {
        try await client.upload(operations, to: partition, requestId: "r-" + UUID().uuidString)
    }

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
