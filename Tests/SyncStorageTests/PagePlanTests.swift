import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

@Suite("Page reads", .timeLimit(.minutes(30)))
struct PagePlanTests {
    /// The shared buffers `sql` touches when run a second time on one connection (the first
    /// run loads the catalog), from `EXPLAIN (ANALYZE, BUFFERS)`.
    static func buffers(_ sql: String, _ db: TestDatabase) async throws -> Int {
        try await db.client.withConnection { connection in
            var plan = JSONValue.null
            for _ in 0..<2 {
                let rows = try await connection.query(PostgresQuery(unsafeSQL: "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + sql), logger: db.logger)
                for try await text in rows.decode(String.self) { plan = try JSONParser().parse(text) }
            }
            let top = plan.arrayValue?.first?["Plan"]
            return Int((top?["Shared Hit Blocks"]?.intValue ?? -1_000_000) + (top?["Shared Read Blocks"]?.intValue ?? 0))
        }
    }

    @Test("a page walks the partition's index in order even when the table has no statistics yet")
    func orderedWithoutStatistics() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            // No statistics: autovacuum may not analyze the table during the test.
            try await db.client.query("ALTER TABLE psync_objects SET (autovacuum_enabled = false)", logger: db.logger)
            let room = partition("conversation=big")
            for batch in 0..<10 {
                let operations: [SyncOperation] = (0..<500).map { n in
                    .put(key("ChatMessage", "m\(batch)-\(n)"), body: ["text": .string(String(repeating: "x", count: 100))])
                }
                try await store.upload(Upload(partition: room, operations: operations, principal: "u"))
            }
            // Ten objects from the start of a 5,000-object partition: a few index and heap
            // pages. A bitmap scan of the partition and a sort would touch all of its ~100.
            let touched = try await Self.buffers("SELECT * FROM psync_page('conversation=big', 0, NULL, NULL, NULL, 10)", db)
            #expect((0..<30).contains(touched), "\(touched) buffers for a page of 10")
            // The whole partition still reads back in pages, in order.
            var cursor: Cursor?
            var seen: [ObjectKey] = []
            repeat {
                let batch = try await store.changes(in: room, after: cursor, limit: 700)
                seen += batch.objects.map(\.key)
                cursor = batch.cursor
                if batch.upToDate { break }
            } while true
            #expect(seen.count == 5_000)
            #expect(Set(seen).count == 5_000)
        }
    }
}
