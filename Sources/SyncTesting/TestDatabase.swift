import Logging
import PostgresNIO
import SyncStorage

/// A fresh migrated database for one test, with a running client.
public struct TestDatabase: Sendable {
    public let url: DatabaseURL
    public let client: PostgresClient
    public let logger: Logger

    /// An object store on this database.
    package func store(_ configuration: StorageConfiguration = .init()) -> ObjectStore {
        ObjectStore(client: client, configuration: configuration, logger: logger)
    }

    /// Runs `body` with a new database, dropped afterwards whether the body succeeds or not.
    ///
    /// - Parameters:
    ///   - exclusive: run with no other database test at the same time: for tests that assert on
    ///     time or load the machine heavily.
    ///   - timeLimit: how long the body may run once it has its database (time spent queued
    ///     behind exclusive tests does not count); the test fails with ``TestTimeout`` after it,
    ///     and the body, cancelled, is no longer waited for, so the tests queued behind it go on.
    public static func with<Result: Sendable>(
        maximumConnections: Int = 20,
        exclusive: Bool = false,
        timeLimit: Duration = .seconds(120),
        _ body: @escaping @Sendable (TestDatabase) async throws -> Result
    ) async throws -> Result {
        try await TestScheduling.run(exclusive: exclusive, limit: timeLimit) {
            try await withDatabase(maximumConnections: maximumConnections, body)
        }
    }

    private static func withDatabase<Result: Sendable>(
        maximumConnections: Int,
        _ body: @Sendable (TestDatabase) async throws -> Result
    ) async throws -> Result {
        let url = try await TestPostgres.shared.createDatabase()
        let logger = TestPostgres.makeLogger("psync.test")
        do {
            let result = try await TestPostgres.withClient(url, logger: logger, maximumConnections: maximumConnections) {
                client in
                try await body(TestDatabase(url: url, client: client, logger: logger))
            }
            try? await TestPostgres.shared.dropDatabase(url)
            return result
        } catch {
            try? await TestPostgres.shared.dropDatabase(url)
            throw error
        }
    }
}
