import PostgresNIO
import SyncStorage
import SyncTesting
import Testing

/// What a write costs PostgreSQL beyond the rows it changes (migration 0019).
@Suite("Write amplification", .timeLimit(.minutes(30)))
struct WriteAmplificationTests {
    @Test("every write's bump of a partition's version stays on its row's page (a heap-only update, no new key in the index), for the 600 partitions of one many-partition write")
    func partitionBumpsAreHeapOnly() async throws {
        try await TestDatabase.with { db in
            let partitions = (0..<600).map { "user=u\($0)" }
            let lockAndRead = """
                SELECT count(*) FROM psync_lock_read(ARRAY[\(partitions.map { "'\($0)'" }.joined(separator: ","))]::text[],
                                                     '{}'::text[], '{}'::text[], NULL)
                """
            try await db.client.withConnection { connection in
                func scalar(_ sql: String) async throws -> Int64 {
                    for try await value in try await connection.query(PostgresQuery(unsafeSQL: sql), logger: db.logger).decode(Int64.self) {
                        return value
                    }
                    return -1
                }
                // The rows written, each partition's first version, on pages filled as the
                // table says.
                #expect(try await scalar(lockAndRead) == 600)
                // Their next versions, counted inside the transaction that writes them.
                try await connection.query("BEGIN", logger: db.logger)
                #expect(try await scalar(lockAndRead) == 600)
                let updated = try await scalar("SELECT pg_stat_get_xact_tuples_updated('psync_partitions'::regclass)")
                let heapOnly = try await scalar("SELECT pg_stat_get_xact_tuples_hot_updated('psync_partitions'::regclass)")
                try await connection.query("COMMIT", logger: db.logger)
                #expect(updated == 600)
                // Pages filled to the brim (no fill factor) kept about half of them.
                #expect(heapOnly == 600, "\(heapOnly) of \(updated) updates were heap-only")
            }
            #expect(try await db.scalar("SELECT max(version) FROM psync_partitions") == 2)
        }
    }
}
