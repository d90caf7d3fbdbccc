import Foundation
import Locking
import PartitionSyncServer
import PostgresNIO
import SyncImport
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// The import's read-ahead by partition (``PartitionWindow``): messages of many conversations
/// interleaved in the export are written a few partitions per transaction, two transactions at
/// a time, and what the partitions' versions and a client's catch-up say stays exact.
@Suite("Import grouped by partition", .timeLimit(.minutes(30)))
struct ImportWindowTests {
    static let rooms = 12
    static let perRoom = 100

    /// ChatMessage documents `prefix-<n>` round robin over the rooms, one per line.
    static func export(_ prefix: String) throws -> String {
        let lines = (0..<rooms * perRoom).map { number in
            ImportRefusalTests.message("\(prefix)-\(number)", text: "message \(number)", partition: "conversation=window-\(number % rooms)")
        }
        return try ImportRefusalTests.export("ChatMessage.json", lines)
    }

    static func room(_ number: Int) -> Partition { try! Partition("conversation=window-\(number)") }

    static func options(_ path: String) -> ImportOptions {
        var options = ImportOptions(paths: [path])
        options.batchDocuments = 20
        options.windowDocuments = 240
        return options
    }

    /// Each room's objects as a client reads them from `cursor` on, in pages of 7.
    static func catchUp(_ store: ObjectStore, _ partition: Partition, from cursor: Cursor?) async throws -> (ids: [String], cursor: Cursor) {
        var cursor = cursor
        var ids: [String] = []
        while true {
            let page = try await store.changes(in: partition, after: cursor, limit: 7)
            ids += page.objects.map(\.key.id)
            cursor = page.cursor
            if page.upToDate { return (ids, page.cursor) }
        }
    }

    /// Each room's version, and the versions its objects hold.
    static func versions(_ db: TestDatabase) async throws -> [String: (head: Int64, objects: Set<Int64>)] {
        var result: [String: (head: Int64, objects: Set<Int64>)] = [:]
        for try await (partition, version) in try await db.client.query(
            "SELECT partition, version FROM psync_partitions WHERE partition LIKE 'conversation=window-%'"
        ).decode((String, Int64).self) { result[partition] = (version, []) }
        for try await (partition, version) in try await db.client.query(
            "SELECT partition, version FROM psync_objects WHERE partition LIKE 'conversation=window-%'"
        ).decode((String, Int64).self) { result[partition]?.objects.insert(version) }
        return result
    }

    @Test("interleaved conversations are written a few per transaction; versions are gapless and a client sees every object once")
    func groupedByPartition() async throws {
        try await TestDatabase.with { db in
            let first = try await ImportHarness.run(db, Self.options(try Self.export("a")))
            #expect(first.total.imported == Self.rooms * Self.perRoom, "\(first.lines)")

            // 60 transactions of 20 documents: in file order each one writes to all 12 rooms
            // (720 partition versions); grouped, one or two rooms each.
            let versions = try await Self.versions(db)
            #expect(versions.count == Self.rooms)
            let written = versions.values.reduce(0) { $0 + $1.head }
            #expect(written <= 180, "partition versions raised: \(written)")
            for (partition, room) in versions {
                // Every version of a room is a transaction that wrote some of its objects.
                #expect(room.objects == Set(1...room.head), "\(partition): head \(room.head), objects at \(room.objects.sorted())")
            }

            var cursors: [Cursor] = []
            for number in 0..<Self.rooms {
                let (ids, cursor) = try await Self.catchUp(db.store(), Self.room(number), from: nil)
                #expect(ids.count == Self.perRoom && Set(ids).count == Self.perRoom, "room \(number): \(ids.count) objects")
                #expect(Set(ids) == Set(stride(from: number, to: Self.rooms * Self.perRoom, by: Self.rooms).map { "a-\($0)" }))
                cursors.append(cursor)
            }

            // A client that caught up before the second import sees exactly its documents after.
            let second = try await ImportHarness.run(db, Self.options(try Self.export("b")))
            #expect(second.total.imported == Self.rooms * Self.perRoom, "\(second.lines)")
            for number in 0..<Self.rooms {
                let (ids, _) = try await Self.catchUp(db.store(), Self.room(number), from: cursors[number])
                #expect(ids.count == Self.perRoom && Set(ids).count == Self.perRoom, "room \(number): \(ids.count) objects")
                #expect(Set(ids) == Set(stride(from: number, to: Self.rooms * Self.perRoom, by: Self.rooms).map { "b-\($0)" }))
            }
        }
    }

    @Test("an export imported again in another grouping stores nothing twice")
    func againRegrouped() async throws {
        try await TestDatabase.with { db in
            let path = try Self.export("c")
            var fileOrder = Self.options(path)
            fileOrder.windowDocuments = fileOrder.batchDocuments
            let first = try await ImportHarness.run(db, fileOrder)
            #expect(first.total.imported == Self.rooms * Self.perRoom, "\(first.lines)")
            let writers = try await ImportResumeTests.stored(db)
            let again = try await ImportHarness.run(db, Self.options(path))
            #expect(again.total.imported == 0 && again.total.unchanged == Self.rooms * Self.perRoom, "\(again.lines)")
            #expect(try await ImportResumeTests.stored(db) == writers, "no row written again")
        }
    }

    @Test("an id given in two partitions, written by two transactions at once, is stored once and refused once; the import goes on")
    func sameIDTwoPartitionsAtOnce() async throws {
        try await TestDatabase.with { db in
            // Each id twice in a row, in two rooms: the window puts the two in different
            // batches, and two batches are written at a time.
            let lines = (0..<600).flatMap { number in
                [0, 1].map { copy in
                    ImportRefusalTests.message(
                        "twice-\(number)", text: "copy \(copy)", partition: "conversation=window-\((number + copy) % Self.rooms)")
                }
            }
            var options = ImportOptions(paths: [try ImportRefusalTests.export("ChatMessage.json", lines)])
            options.batchDocuments = 10
            options.windowDocuments = 40
            options.writers = 2
            let printed = ImportHarness.Printed()
            let report = try await ImportHarness.run(db, options, printed: printed)
            #expect(report.failure == nil)
            #expect(report.total.imported == 600 && report.total.refused == 600, "\(report.lines)")
            let codes = Set(printed.refusals.withLock { $0 }.map(\.code))
            #expect(codes.isSubset(of: ["partition_mismatch", "exists"]), "\(codes)")
            var stored: [String: String] = [:]
            for try await (id, partition) in try await db.client.query(
                "SELECT id, partition FROM psync_objects WHERE collection = 'ChatMessage'"
            ).decode((String, String).self) { stored[id] = partition }
            #expect(stored.count == 600)
        }
    }
}
