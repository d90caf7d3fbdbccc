import Foundation
import Locking
import PartitionSync
import PostgresNIO
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// The server's PostgreSQL connections.
@Suite("Connection pool", .timeLimit(.minutes(30)))
struct ConnectionPoolTests {
    @Test("psync serve keeps to the pool size it is given (--max-connections) under concurrent requests, and names its connections")
    func poolSize() async throws {
        try await TestDatabase.with { db in
            let server = try ServerProcess(database: db.url, environment: ["PSYNC_DB_POOL": "3"])
            try await server.start()
            defer { Task { [server] in await server.stop() } }
            let http = server.http
            let alice = try await http.register("alice@example.com", password: "correct horse battery")
            let count = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'psync'"
            let listener = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'psync listener'"
            #expect(try await db.scalar(listener) == 1)

            // Rounds of forty reads at once, while the server's connections are counted.
            let watch = Watch()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    while !watch.done.withLock({ $0 }) {
                        let now = try await db.scalar(count)
                        watch.most.withLock { $0 = max($0, now) }
                        try await Task.sleep(for: .milliseconds(10))
                    }
                }
                for _ in 0..<5 { try await Self.readsAtOnce(http, alice) }
                watch.done.withLock { $0 = true }
                try await group.waitForAll()
            }
            let seen = watch.most.withLock { $0 }
            #expect(seen >= 1 && seen <= 3, "the server had \(seen) connections in its pool")
        }
    }

    @Test("psync serve closes a pooled connection left unused for --db-idle-timeout seconds")
    func idleConnectionsClosed() async throws {
        try await TestDatabase.with { db in
            let server = try ServerProcess(database: db.url, environment: ["PSYNC_DB_POOL": "6", "PSYNC_DB_IDLE_TIMEOUT": "1"])
            try await server.start()
            defer { Task { [server] in await server.stop() } }
            let http = server.http
            let alice = try await http.register("alice@example.com", password: "correct horse battery")
            let count = "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'psync'"

            // Reads at once until the pool has opened several connections.
            var opened: Int64 = 0
            for _ in 0..<20 where opened < 4 {
                try await Self.readsAtOnce(http, alice)
                opened = try await db.scalar(count)
            }
            try #require(opened >= 4, "the reads opened only \(opened) connections")

            // Unused, they are closed after a second; at postgres-nio's default (60 s) they
            // would outlast this wait. The server's own periodic work (sequencer, triggers,
            // sweeps) keeps one or two in use.
            let deadline = ContinuousClock.now + .seconds(30)
            var left = opened
            while left > 2, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
                left = try await db.scalar(count)
            }
            #expect(left <= 2, "\(left) of the \(opened) connections were still open after 30 s")
        }
    }

    @Test("the replicas' pools keep their connections as the primary's does: its keep-alive and idle timeout")
    func replicaPools() throws {
        var configuration = ServerConfiguration()
        configuration.replicas.urls = [try DatabaseURL("postgres://psync@replica.example.com:5433/psync")]
        configuration.replicas.poolSize = 3
        configuration.databaseKeepAlive = .seconds(7)
        configuration.databaseIdleTimeout = .seconds(4)
        let pool = ReadReplicas.clientConfiguration(configuration.replicas.urls[0], configuration.replicaPools, applicationName: "psync")
        #expect(pool.options.keepAliveBehavior?.frequency == .seconds(7))
        #expect(pool.options.connectionIdleTimeout == .seconds(4))
        #expect(pool.options.maximumConnections == 3)
        #expect(pool.options.additionalStartupParameters.contains { $0 == "application_name" && $1 == "psync" })

        configuration.databaseKeepAlive = nil
        let none = ReadReplicas.clientConfiguration(configuration.replicas.urls[0], configuration.replicaPools, applicationName: "psync")
        #expect(none.options.keepAliveBehavior == nil)
    }

    /// Forty reads of `user`'s partition at once, each answered 200.
    static func readsAtOnce(_ http: TestHTTPClient, _ user: TestHTTPClient.Tokens) async throws {
        try await withThrowingTaskGroup(of: Void.self) { reads in
            for _ in 0..<40 {
                reads.addTask {
                    let response = try await http.get("/v1/partitions/user=\(user.userID)/changes", token: user.accessToken)
                    #expect(response.status == 200, "\(response.status)")
                }
            }
            try await reads.waitForAll()
        }
    }

    /// The most connections seen, and when to stop looking.
    final class Watch: Sendable {
        let most = Locked<Int64>(0)
        let done = Locked(false)
    }
}
