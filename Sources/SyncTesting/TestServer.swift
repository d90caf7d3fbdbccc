import Foundation
import Logging
import PartitionSync
import ServiceLifecycle
import SyncServer
import SyncStorage

/// A sync server started for a test on a free loopback port, over a test database; several
/// may share one database to act as instances of one deployment.
public struct TestServer: Sendable {
    package let server: SyncServer
    public let port: Int

    package init(server: SyncServer, port: Int) {
        self.server = server
        self.port = port
    }

    public var baseURL: String { "http://127.0.0.1:\(port)" }
    public var webSocketURL: String { "ws://127.0.0.1:\(port)/v1/sync" }
    public var http: TestHTTPClient { TestHTTPClient(baseURL: baseURL) }

    /// A secret shared by every test server, so instances accept each other's tokens.
    public static let jwtSecret = "test-secret-for-partition-sync-0123456789"

    /// The configuration tests start from: fast password hashing, a shared JWT secret.
    package static var defaultConfiguration: ServerConfiguration {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.auth.jwtSecret = jwtSecret
        configuration.auth.bcryptCost = 4
        // Tests register many users from one address.
        configuration.auth.registrationsPerAddress = 1_000_000
        return configuration
    }

    /// Permissions for tests: `user=<id>` belongs to its user.
    public static var defaultPermissions: Permissions {
        var permissions = Permissions()
        permissions.register(OwnerRule(), for: PartitionKind("user"))
        return permissions
    }

    /// Runs `body` with a server of `application` on `database`, on a free loopback port;
    /// shuts it down gracefully afterwards. The application's triggers run in it.
    ///
    /// ```swift
    /// try await TestDatabase.with { db in
    ///     try await TestServer.with(database: db, application: .couchChat) { server in
    ///         let ann = try await server.register("ann@example.com")
    ///         let client = try await server.connect(token: ann.accessToken)
    ///         ...
    ///     }
    /// }
    /// ```
    public static func with<Result: Sendable>(
        database: TestDatabase, application: SyncApplication, _ body: @Sendable (TestServer) async throws -> Result
    ) async throws -> Result {
        try await with(database: database.url, application: application, body)
    }

    /// Runs `body` with a server of `application` that requires email verification and mails
    /// its codes to `sink` (docs/SECURITY.md, "Identity"): a registered email binds to nothing
    /// until ``verifyEmail(token:sink:)``.
    public static func with<Result: Sendable>(
        database: TestDatabase, application: SyncApplication, verifyingEmailsAt sink: SMTPSink,
        _ body: @Sendable (TestServer) async throws -> Result
    ) async throws -> Result {
        try await with(database: database.url, application: application, configure: { configuration in
            configuration.auth.emailVerification.required = true
            configuration.auth.emailVerification.mailer = SMTPMailer(
                settings: SMTPMailer.Settings(url: sink.url, sender: "no-reply@psync.test", helloName: "psync.test")!,
                logger: TestPostgres.makeLogger("psync.test.mail"))
        }, body)
    }

    /// Enters the code last mailed to the account of `token` (its email's newest mail at `sink`).
    public func verifyEmail(token: String, sink: SMTPSink) async throws {
        guard let email = try await http.get("/v1/auth/me", token: token).json?["email"]?.stringValue else {
            throw TestTimeout(what: "the account's email")
        }
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let code = try sink.mails().last(where: { $0.to.contains(email) })?.verificationCode {
                let response = try await http.post("/v1/auth/email/verify", ["code": .string(code)], token: token)
                guard response.status == 200 else { throw UnexpectedResponse(response: response) }
                return
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw TestTimeout(what: "a verification mail to \(email)")
    }

    /// Runs `body` with a server on `database` with these permissions and no triggers.
    package static func with<Result: Sendable>(
        database: DatabaseURL,
        permissions: Permissions = defaultPermissions,
        configure: @Sendable (inout ServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (TestServer) async throws -> Result
    ) async throws -> Result {
        try await with(database: database, application: SyncApplication(permissions: permissions), configure: configure, body)
    }

    /// Runs `body` with a server of `application` on `database`; shuts it down gracefully afterwards.
    package static func with<Result: Sendable>(
        database: DatabaseURL,
        application: SyncApplication,
        configure: @Sendable (inout ServerConfiguration) -> Void = { _ in },
        _ body: @Sendable (TestServer) async throws -> Result
    ) async throws -> Result {
        var configuration = defaultConfiguration
        configure(&configuration)
        let logger = TestPostgres.makeLogger("psync.test.server")
        let server = SyncServer(configuration: configuration, database: database, application: application, logger: logger)
        let group = ServiceGroup(services: [server], gracefulShutdownSignals: [], logger: logger)
        return try await withThrowingTaskGroup(of: Result?.self) { tasks in
            tasks.addTask {
                try await group.run()
                return nil
            }
            do {
                let port = try await server.waitUntilListening()
                let test = TestServer(server: server, port: port)
                try await test.waitUntilReady()
                let result = try await body(test)
                await group.triggerGracefulShutdown()
                while let next = try await tasks.next() { if next != nil { break } }
                return result
            } catch {
                await group.triggerGracefulShutdown()
                tasks.cancelAll()
                throw error
            }
        }
    }

    /// Waits until `/ready` answers 200: migrated, and the change listener is listening.
    public func waitUntilReady(timeout: Duration = .seconds(20)) async throws {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if let response = try? await http.get("/ready"), response.status == 200 { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestTimeout(what: "the server to be ready")
    }

    /// Registers a user and returns its tokens.
    public func register(_ email: String, password: String = "correct horse battery") async throws -> TestHTTPClient.Tokens {
        try await http.register(email, password: password)
    }

    /// A WebSocket client authenticated with `token` in the upgrade request.
    public func connect(token: String?) async throws -> TestSyncClient {
        try await TestSyncClient.connect(url: webSocketURL, token: token)
    }
}

/// A test waited too long.
public struct TestTimeout: Error, CustomStringConvertible {
    public var what: String
    public init(what: String) { self.what = what }
    public var description: String { "timed out waiting for \(what)" }
}
