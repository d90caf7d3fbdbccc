import Foundation
import Locking
import Logging
import PostgresNIO
import SyncProtocol

/// The raw PostgreSQL floor: the same rows, the same concurrency, through postgres-nio
/// directly, with none of the server's work (no permissions, no versions, no events, no JSON
/// merge, no WebSocket).
struct Floor {
    let client: PostgresClient
    let logger: Logger

    /// A table of message rows like the server's objects: a text key, a partition, a jsonb body.
    func prepare() async throws {
        try await client.query(
            """
            CREATE TABLE IF NOT EXISTS bench_floor_messages (
                id bigserial PRIMARY KEY, partition text COLLATE "C" NOT NULL, body jsonb NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now())
            """, logger: logger)
    }

    /// Single-row INSERT transactions from `concurrency` tasks for `seconds`: rows per second.
    func inserts(concurrency: Int, seconds: Int, body: @escaping @Sendable (Int) -> String) async throws -> Double {
        try await prepare()
        let deadline = ContinuousClock.now + .seconds(seconds)
        let started = ContinuousClock.now
        let total = try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<concurrency {
                group.addTask {
                    var count = 0
                    while ContinuousClock.now < deadline {
                        let text = body(count)
                        try await client.query(
                            "INSERT INTO bench_floor_messages (partition, body) VALUES (\("conversation=floor-\(worker)"), \(text)::jsonb)",
                            logger: logger)
                        count += 1
                    }
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        return Double(total) / started.duration(to: .now).seconds
    }

    /// A row inserted and announced with NOTIFY in one transaction, `rate` times a second,
    /// `total` times; a LISTENing connection measures insert-to-notification latency.
    func notifications(rate: Int, total: Int, database: PostgresConnection.Configuration) async throws -> LatencyRecorder {
        try await prepare()
        let recorder = LatencyRecorder()
        let listener = try await PostgresConnection.connect(configuration: database, id: 900, logger: logger)
        defer { Task { try? await listener.close() } }
        let received = Once<Void>()
        let counter = Counter()
        let listening = Task {
            try await listener.listen(on: "bench_floor") { notifications in
                for try await notification in notifications {
                    if let t = UInt64(notification.payload) {
                        let now = DispatchTime.now().uptimeNanoseconds
                        recorder.record(nanoseconds: now > t ? now - t : 0)
                    }
                    if counter.increment() >= total { received.set(()) }
                }
            }
        }
        defer { listening.cancel() }
        try await Task.sleep(for: .milliseconds(300))  // LISTEN is active once listen(on:) started
        try await paced(rate: rate, count: total) { index in
            let stamp = String(DispatchTime.now().uptimeNanoseconds)
            try await client.withTransaction(logger: logger) { connection in
                try await connection.query(
                    "INSERT INTO bench_floor_messages (partition, body) VALUES ('conversation=floor', \(#"{"n":\#(index)}"#)::jsonb)",
                    logger: logger)
                try await connection.query("SELECT pg_notify('bench_floor', \(stamp))", logger: logger)
            }
        }
        _ = await waitFor([received], timeout: .seconds(10))
        return recorder
    }

    /// Reads a partition's objects from the server's own table in keyset pages of `pageSize`,
    /// in the order and through the index a snapshot uses: rows per second and rows read.
    func pagedRead(partition: String, pageSize: Int) async throws -> (rowsPerSecond: Double, rows: Int) {
        try await client.withConnection { connection in
            // The plan the server's reads use (migration 0005): the index walked in order, never
            // a bitmap scan and sort, which the planner picks while the table has no statistics.
            try await connection.query("SET enable_sort = off", logger: logger)
            let started = ContinuousClock.now
            var rows = 0
            var last: (Int64, String, String) = (-1, "", "")
            while true {
                let page = try await connection.query(
                    """
                    SELECT version, collection, id, body::text FROM psync_objects
                    WHERE partition = \(partition) AND (version, collection, id) > (\(last.0), \(last.1), \(last.2))
                    ORDER BY version, collection, id LIMIT \(pageSize)
                    """, logger: logger)
                var count = 0
                for try await (version, collection, id, body) in page.decode((Int64, String, String, String?).self) {
                    last = (version, collection, id)
                    _ = body?.utf8.count
                    count += 1
                }
                rows += count
                if count < pageSize { break }
            }
            let elapsed = started.duration(to: .now).seconds
            try await connection.query("RESET enable_sort", logger: logger)
            return (Double(rows) / elapsed, rows)
        }
    }
}

/// Runs `body(index)` `count` times at `rate` per second (open loop: a slow call does not
/// delay the schedule of the next ones), at most 64 at a time.
func paced(rate: Int, count: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
    let interval = Duration.nanoseconds(1_000_000_000 / max(rate, 1))
    let start = ContinuousClock.now
    try await withThrowingTaskGroup(of: Void.self) { group in
        var running = 0
        for index in 0..<count {
            try await Task.sleep(until: start + interval * index, clock: .continuous)
            if running >= 64 {
                try await group.next()
                running -= 1
            }
            group.addTask { try await body(index) }
            running += 1
        }
        try await group.waitForAll()
    }
}

/// A counter shared by tasks.
final class Counter: Sendable {
    private let value = Locked(0)

    @discardableResult
    func increment(by amount: Int = 1) -> Int { value.withLock { $0 += amount; return $0 } }
    var current: Int { value.withLock { $0 } }
}
