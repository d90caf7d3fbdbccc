import Foundation
import Locking
import PartitionSync
import PartitionSyncServer
import PostgresNIO
import RChat
import Synchronization
import SyncImport
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// Documents the application would refuse are reported with their reason and stored
/// nowhere; `--trusted` skips the application's checks but never the storage limits.
@Suite("Import refusals", .timeLimit(.minutes(30)))
struct ImportRefusalTests {
    /// A mongoexport file (relaxed, one document per line) named `name` in a fresh folder.
    static func export(_ name: String, _ lines: [String]) throws -> String {
        let folder = try TestScratch.folder("import-refusals")
        let path = folder.appendingPathComponent(name).path
        try Data(lines.map { $0 + "\n" }.joined().utf8).write(to: URL(fileURLWithPath: path))
        return path
    }

    static func message(_ id: String, text: String, partition: String = "conversation=c-1") -> String {
        let body: JSONValue = [
            "_id": .string(id), "partition": .string(partition), "author": "ann@example.com", "text": .string(text),
            "location": [], "timestamp": ["$date": "2024-05-01T10:00:00.000Z"],
        ]
        return body.jsonString
    }

    @Test("the validators' refusals are reported with code, document and field and nothing of them is stored; --trusted stores them")
    func validatorsAndTrusted() async throws {
        try await TestDatabase.with { db in
            let long = String(repeating: "x", count: 20_000)
            let path = try Self.export("ChatMessage.json", [
                Self.message("ok-1", text: "hello"),
                Self.message("long-1", text: long),
                #"{"_id": "nopart-1", "text": "no partition"}"#,
                Self.message("huge-1", text: String(repeating: "y", count: 1_100_000)),
                #"{"_id": "bad-json", "partition": tru}"#,
                Self.message("ok-2", text: "bye"),
            ])
            let printed = ImportHarness.Printed()
            let report = try await ImportHarness.run(db, ImportOptions(paths: [path]), printed: printed)
            #expect(report.total.read == 6 && report.total.imported == 2 && report.total.refused == 4, "\(report.lines)")
            let refusals = Dictionary(printed.refusals.withLock { $0 }.map { ($0.documentID ?? "line \($0.line ?? 0)", $0) }, uniquingKeysWith: { a, _ in a })
            #expect(refusals["\"long-1\""]?.code == "validation_failed")
            #expect(refusals["\"long-1\""]?.field == "text")
            #expect(refusals["\"long-1\""]?.documentNumber == 2)
            #expect(refusals["\"nopart-1\""]?.code == "invalidPartition")
            #expect(refusals["\"huge-1\""]?.code == "payload_too_large")
            #expect(refusals.values.contains { $0.code == "malformedJSON" && $0.line == 5 })
            let store = db.store()
            #expect(try await store.body(of: ObjectKey(collection: "ChatMessage", id: "ok-2"))?["text"] == "bye")
            for refused in ["long-1", "nopart-1", "huge-1"] {
                #expect(try await store.body(of: ObjectKey(collection: "ChatMessage", id: refused)) == nil, "\(refused)")
            }

            var trusted = ImportOptions(paths: [path])
            trusted.trusted = true
            let again = try await ImportHarness.run(db, trusted)
            // The long text passes without the schema; the body over 1 MiB never does.
            #expect(again.total.imported == 1 && again.total.unchanged == 2 && again.total.refused == 3, "\(again.lines)")
            #expect(try await store.body(of: ObjectKey(collection: "ChatMessage", id: "long-1"))?["text"] == .string(long))
            #expect(try await store.body(of: ObjectKey(collection: "ChatMessage", id: "huge-1")) == nil)
        }
    }

    @Test("a collection the application does not have is refused; an id stored with another body is kept and reported")
    func undeclaredAndConflicts() async throws {
        try await TestDatabase.with { db in
            let foreign = try Self.export("Task.json", [#"{"_id": "t-1", "_partition": "user=u-1", "name": "x"}"#])
            let printed = ImportHarness.Printed()
            let report = try await ImportHarness.run(db, ImportOptions(paths: [foreign]), printed: printed)
            #expect(report.total.refused == 1)
            #expect(printed.refusals.withLock { $0 }.first?.code == "validation_failed")

            let first = try Self.export("ChatMessage.json", [Self.message("m-1", text: "first")])
            _ = try await ImportHarness.run(db, ImportOptions(paths: [first]))
            let changed = try Self.export("ChatMessage.json", [Self.message("m-1", text: "second")])
            let conflict = ImportHarness.Printed()
            let again = try await ImportHarness.run(db, ImportOptions(paths: [changed]), printed: conflict)
            #expect(again.total.refused == 1)
            #expect(conflict.refusals.withLock { $0 }.first?.code == "exists")
            #expect(try await db.store().body(of: ObjectKey(collection: "ChatMessage", id: "m-1"))?["text"] == "first")
        }
    }

    @Test("an id twice in one batch: stored once, the same body again unchanged, another body refused as exists")
    func duplicateInOneBatch() async throws {
        try await TestDatabase.with { db in
            let path = try Self.export("ChatMessage.json", [
                Self.message("d-1", text: "first"),
                Self.message("d-2", text: "kept"),
                Self.message("d-1", text: "first"),
                Self.message("d-2", text: "another"),
                Self.message("d-3", text: String(repeating: "x", count: 20_000)),
                Self.message("d-4", text: "last"),
            ])
            let printed = ImportHarness.Printed()
            let report = try await ImportHarness.run(db, ImportOptions(paths: [path]), printed: printed)
            #expect(report.total.imported == 3 && report.total.unchanged == 1 && report.total.refused == 2, "\(report.lines)")
            let refusals = printed.refusals.withLock { $0 }
            #expect(refusals.contains { $0.documentID == "\"d-2\"" && $0.code == "exists" && $0.documentNumber == 4 }, "\(refusals)")
            #expect(refusals.contains { $0.documentID == "\"d-3\"" && $0.code == "validation_failed" }, "\(refusals)")
            let store = db.store()
            #expect(try await store.body(of: ObjectKey(collection: "ChatMessage", id: "d-1"))?["text"] == "first")
            #expect(try await store.body(of: ObjectKey(collection: "ChatMessage", id: "d-2"))?["text"] == "kept")
            #expect(try await store.body(of: ObjectKey(collection: "ChatMessage", id: "d-3")) == nil)
            #expect(try await store.body(of: ObjectKey(collection: "ChatMessage", id: "d-4"))?["text"] == "last")
            var rows: Int64 = 0
            for try await count in try await db.client.query(
                "SELECT count(*)::bigint FROM psync_objects WHERE collection = 'ChatMessage'").decode(Int64.self) { rows = count }
            #expect(rows == 3)
        }
    }
}
