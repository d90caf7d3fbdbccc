import Foundation
import PartitionSync
import SyncProtocol
import Testing

/// A server of an application on a fresh database, and its users as WebSocket clients: where
/// an application's end-to-end tests start. An application adds what its tests share in an
/// extension (a user whose account its triggers have set up, its own documents).
///
/// ```swift
/// try await TestApplication.with(.couchChat) { app in
///     let ann = try await app.user("ann@example.com") { db, user in
///         try await db.object(Profile.self, id: Profile.id(of: user.email)) != nil
///     }
///     let answer = try await ann.put(Room(id: "r1", title: "Team", owner: ann.email), in: Partition("room=r1"))
/// }
/// ```
public struct TestApplication: Sendable {
    public let server: TestServer
    public let db: TestDatabase

    public init(server: TestServer, db: TestDatabase) {
        self.server = server
        self.db = db
    }

    /// Runs `body` with a server of `application` on a new database, dropped after.
    public static func with(_ application: SyncApplication, _ body: @escaping @Sendable (TestApplication) async throws -> Void) async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db, application: application) { server in
                try await body(TestApplication(server: server, db: db))
            }
        }
    }

    /// A registered user with a connected WebSocket client.
    public struct User: Sendable {
        public let email: String
        public let tokens: TestHTTPClient.Tokens
        public let client: TestSyncClient
        public var id: String { tokens.userID }

        public init(email: String, tokens: TestHTTPClient.Tokens, client: TestSyncClient) {
            self.email = email
            self.tokens = tokens
            self.client = client
        }
    }

    /// Registers `email` and connects a client, then waits until `ready` holds (the
    /// application's triggers have set the account up), recording an issue if it never does.
    public func user(_ email: String, ready: @escaping @Sendable (TestDatabase, User) async throws -> Bool) async throws -> User {
        let tokens = try await server.register(email)
        let client = try await server.connect(token: tokens.accessToken)
        let user = User(email: email, tokens: tokens, client: client)
        let db = db
        #expect(try await TestTriggers.eventually { try await ready(db, user) }, "\(email) was never set up")
        return user
    }
}

extension TestApplication.User {
    /// Uploads operations under a new request id and returns the answer.
    public func upload(_ operations: [SyncOperation], to partition: Partition) async throws -> ServerMessage {
        try await client.upload(operations, to: partition, requestId: "r-" + UUID().uuidString)
    }

    /// Puts documents into one partition, in one upload.
    public func put(_ models: any SyncModel..., in partition: Partition) async throws -> ServerMessage {
        try await upload(models.map { try $0.putOperation() }, to: partition)
    }
}
