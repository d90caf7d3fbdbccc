import CouchChat
import PartitionSync
import SyncTesting
import Testing

/// A CouchChat server on a fresh database, and its users as WebSocket clients.
struct CouchChatHarness {
    let server: TestServer
    let db: TestDatabase

    /// Runs `body` with a CouchChat server on a new database.
    static func with(_ body: @escaping @Sendable (CouchChatHarness) async throws -> Void) async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db, application: .couchChat) { server in
                try await body(CouchChatHarness(server: server, db: db))
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

    /// Registers `email` and connects a client; waits until the server has made its profile.
    func user(_ email: String) async throws -> User {
        let tokens = try await server.register(email)
        let client = try await server.connect(token: tokens.accessToken)
        #expect(try await TestTriggers.eventually { try await db.object(Profile.self, id: Profile.id(of: email)) != nil })
        return User(email: email, tokens: tokens, client: client)
    }

    /// Waits until the stored room `id` satisfies `condition`.
    func room(_ id: String, where condition: @Sendable @escaping (Room) -> Bool) async throws -> Room? {
        _ = try await TestTriggers.eventually { try await db.object(Room.self, id: id).map(condition) ?? false }
        return try await db.object(Room.self, id: id)
    }
}

extension CouchChatHarness.User {
    /// Uploads one operation and returns the answer.
    func upload(_ operations: [SyncOperation], to partition: Partition) async throws -> ServerMessage {
        try await client.upload(operations, to: partition, requestId: UUIDString.next())
    }

    /// Puts a document.
    func put(_ model: some SyncModel, in partition: Partition) async throws -> ServerMessage {
        try await upload([model.putOperation()], to: partition)
    }

    /// Creates a room owned by this user, inviting `invitees`.
    func createRoom(_ id: String, title: String, inviting invitees: [String] = []) async throws -> ServerMessage {
        try await put(Room(id: id, title: title, owner: email, pendingMembers: invitees.isEmpty ? nil : invitees), in: try CouchChatPartitions.room(id))
    }

    /// Sets this user's profile.
    func setProfile(acceptsAnyInvitation: Bool? = nil, acceptsInvitationsFrom: [String]? = nil) async throws -> ServerMessage {
        try await put(
            Profile(email: email, nick: "nick", acceptsAnyInvitation: acceptsAnyInvitation, acceptsInvitationsFrom: acceptsInvitationsFrom),
            in: CouchChatPartitions.profiles)
    }
}

/// Request ids, unique in a test process.
enum UUIDString {
    static func next() -> String { "r-" + String(UInt64.random(in: 0...UInt64.max), radix: 36) }
}
