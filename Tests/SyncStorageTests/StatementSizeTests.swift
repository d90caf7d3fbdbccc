import Foundation
import PartitionSync
import PostgresNIO
import SyncProtocol
@testable import SyncStorage
import SyncTesting
import Testing

/// A transaction's writes go to the database in statements of bounded size, and a connection
/// that carried a larger one is closed: postgres-nio keeps each connection's send buffer at the
/// largest size it ever had (a trigger that rewrote a thousand 80 kB records left a 256 MiB
/// buffer behind, for as long as the connection lived).
@Suite("Statement size", .timeLimit(.minutes(30)))
struct StatementSizeTests {
    /// A write statement of `objects` objects and as many events, each body `size` bytes, with
    /// an outcome, a stamp and a clock.
    static func statement(objects: Int, size: Int) -> WriteStatements.Write {
        var statement = WriteStatements.Write()
        let body = EncodedJSONB(bytes: Array("{\"t\":\"\(String(repeating: "x", count: size - 8))\"}".utf8))
        for index in 0..<objects {
            statement.collections.append("Note")
            statement.ids.append("n\(index)")
            statement.partitions.append("notes=a")
            statement.versions.append(7)
            statement.bodies.append(body)
            statement.deleted.append(false)
            statement.marks.append(Int16(index % 3) - 1)
            statement.kinds.append("object")
            statement.operations.append("insert")
            statement.eventCollections.append("Note")
            statement.objectIDs.append("n\(index)")
            statement.eventPartitions.append("notes=a")
            statement.eventVersions.append(7)
            statement.userIDs.append("")
            statement.before.append(EncodedJSONB(bytes: Array("null".utf8)))
            statement.after.append(body)
            statement.changed.append(JSONB(value: .array([])))
            statement.removed.append(JSONB(value: .array([])))
            statement.depths.append(Int32(index))
            statement.authors.append("tester")
            statement.imageBytes.append(Int32(body.bytes.count))
        }
        statement.principals = ["tester"]
        statement.requestIDs = ["r1"]
        statement.outcomePartitions = ["notes=a"]
        statement.outcomes = [JSONB(value: .null)]
        statement.stamp = ["notes=b"]
        statement.clock = 42
        return statement
    }

    @Test("a statement over the budget is split in order: objects, then events; the outcomes and the stamp go last, the clock with every part")
    func splitInOrder() {
        let whole = Self.statement(objects: 10, size: 100)
        let split = whole.split(maximumBytes: 500)
        let parts = split.map(\.statement)
        #expect(parts.count > 2)
        #expect(parts.flatMap(\.ids) == whole.ids)
        #expect(parts.flatMap(\.bodies) == whole.bodies)
        #expect(parts.flatMap(\.marks) == whole.marks)
        #expect(parts.flatMap(\.objectIDs) == whole.objectIDs)
        #expect(parts.flatMap(\.depths) == whole.depths)
        #expect(parts.flatMap(\.after) == whole.after)
        #expect(parts.flatMap(\.imageBytes) == whole.imageBytes)
        #expect(parts.allSatisfy { $0.bytes <= 500 })
        #expect(split.allSatisfy { $0.bytes == $0.statement.bytes })
        #expect(parts.allSatisfy { $0.clock == 42 })
        #expect(parts.dropLast().allSatisfy { $0.requestIDs.isEmpty && $0.stamp.isEmpty })
        #expect(parts.last?.requestIDs == ["r1"] && parts.last?.stamp == ["notes=b"])
        // Every column of a part has one entry per object or per event.
        for part in parts {
            #expect(Set([part.collections.count, part.partitions.count, part.versions.count, part.deleted.count]) == [part.ids.count])
            #expect(Set([part.operations.count, part.before.count, part.changed.count, part.authors.count]) == [part.kinds.count])
            #expect(part.imageBytes.count == part.kinds.count)
        }
    }

    @Test("an object larger than the budget goes alone, and a statement within it stays whole")
    func largeItemsAlone() {
        let large = Self.statement(objects: 3, size: 2_000)
        #expect(large.split(maximumBytes: 500).count == 6)
        let small = Self.statement(objects: 3, size: 100)
        #expect(small.split(maximumBytes: 1 << 20).count == 1)
        #expect(small.split(maximumBytes: 1 << 20).first?.statement.ids == small.ids)
        #expect(small.split(maximumBytes: 1 << 20).first?.bytes == small.bytes)
    }

    @Test("an upload written in many statements is stored whole: its objects, its events in order at one clock, and its outcome")
    func splitUploadStoredWhole() async throws {
        try await TestDatabase.with { db in
            let store = db.store(StorageConfiguration(statementBytes: 1_024))
            let notes = partition("notes=a")
            let text = String(repeating: "y", count: 200)
            let operations = (0..<30).map { SyncOperation.put(key("Note", String(format: "n%02d", $0)), body: ["text": .string(text)]) }
            let upload = Upload(partition: notes, operations: operations, principal: "tester", requestId: "big-1")
            let first = try await store.upload(upload)
            #expect(first.changes.count == 30)
            let snapshot = try await store.changes(in: notes, after: nil)
            #expect(snapshot.objects.count == 30)
            let log = EventLog(store: store)
            try await log.sequence()
            let events = try await log.events(after: 0, limit: 100).filter { $0.partition == notes }
            #expect(events.map { $0.key?.id } == operations.indices.map { String(format: "n%02d", $0) })
            // Every part recorded its events at the transaction's clock.
            for try await (low, high) in try await db.client.query(
                "SELECT min(clock), max(clock) FROM psync_events WHERE partition = 'notes=a'", logger: db.logger
            ).decode((Int64, Int64).self) {
                #expect(low == high && low > 0)
            }
            // The outcome went with the last statement: the same upload again is a replay.
            let again = try await store.upload(upload)
            #expect(again.isReplay)
            #expect(again.version == first.version)
        }
    }

    @Test("a connection that carried a statement of more than four budgets is closed after its transaction; one that did not is kept")
    func outgrownConnectionClosed() async throws {
        try await TestDatabase.with(maximumConnections: 1) { db in
            let store = db.store(StorageConfiguration(statementBytes: 1_024))
            let notes = partition("notes=a")
            func backend() async throws -> Int32 {
                var pid: Int32 = 0
                for try await value in try await db.client.query("SELECT pg_backend_pid()", logger: db.logger).decode(Int32.self) {
                    pid = value
                }
                return pid
            }
            try await store.apply([.put(key("Note", "small"), body: ["text": "short"])], in: notes)
            let before = try await backend()
            try await store.apply([.put(key("Note", "small"), body: ["text": "still short"])], in: notes)
            #expect(try await backend() == before)
            // One object of 8 KiB: its statement (body and event) is over 4 × 1,024 bytes.
            try await store.apply([.put(key("Note", "large"), body: ["text": .string(String(repeating: "z", count: 8_192))])], in: notes)
            let after = try await backend()
            #expect(after != before)
            try await store.apply([.put(key("Note", "small"), body: ["text": "short again"])], in: notes)
            #expect(try await backend() == after)
            #expect(try await store.changes(in: notes, after: nil).objects.count == 2)
        }
    }
}
