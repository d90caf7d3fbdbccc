import Foundation
import Locking
import PartitionSync
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
                for _ in 0..<5 {
                    try await withThrowingTaskGroup(of: Void.self) { reads in
                        for _ in 0..<40 {
                            reads.addTask {
                                let response = try await http.get("/v1/partitions/user=\(alice.userID)/changes", token: alice.accessToken)
                                #expect(response.status == 200, "\(response.status)")
                            }
                        }
                        try await reads.waitForAll()
                    }
                }
                watch.done.withLock { $0 = true }
                try await group.waitForAll()
            }
            let seen = watch.most.withLock { $0 }
            #expect(seen >= 1 && seen <= 3, "the server had \(seen) connections in its pool")
        }
    }

    /// The most connections seen, and when to stop looking.
    final class Watch: Sendable {
        let most = Locked<Int64>(0)
        let done = Locked(false)
    }
}
