import CouchChat
import PartitionSync
import SyncTesting

/// A CouchChat server on a fresh database, and its users as WebSocket clients: the test kit's
/// `TestApplication`, with what CouchChat's tests share.
typealias CouchChatHarness = TestApplication

extension TestApplication {
    /// Runs `body` with a CouchChat server on a new database.
    static func with(_ body: @escaping @Sendable (TestApplication) async throws -> Void) async throws {
        try await with(.couchChat, body)
    }

    /// Registers `email` and connects a client; waits until the server has made its profile.
    func user(_ email: String) async throws -> User {
        try await user(email) { db, user in try await db.object(Profile.self, id: Profile.id(of: user.email)) != nil }
    }

    /// Waits until the stored room `id` satisfies `condition`.
    func room(_ id: String, where condition: @Sendable @escaping (Room) -> Bool) async throws -> Room? {
        _ = try await TestTriggers.eventually { try await db.object(Room.self, id: id).map(condition) ?? false }
        return try await db.object(Room.self, id: id)
    }
}

extension TestApplication.User {
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
