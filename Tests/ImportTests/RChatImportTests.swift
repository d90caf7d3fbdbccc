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

/// RChat as Atlas Device Sync held it, in each of mongoexport's and mongodump's formats,
/// imported into a fresh database: every object equals its source, the pictures are blobs
/// with their bytes, and importing it again changes nothing.
@Suite("Importing RChat", .timeLimit(.minutes(30)))
struct RChatImportTests {
    @Test("every object of the export is stored as its source maps, pictures as blobs; a second import changes nothing",
          arguments: ImportHarness.formats)
    func everyObject(format: String) async throws {
        try await TestDatabase.with { db in
            var options = ImportOptions(paths: [ImportHarness.folder(format)])
            options.batchDocuments = 4
            let printed = ImportHarness.Printed()
            let report = try await ImportHarness.run(db, options, printed: printed)
            #expect(printed.refusals.withLock { $0 }.isEmpty, "\(printed.refusals.withLock { $0 })")
            #expect(report.failure == nil)
            #expect(report.total.read == 12 && report.total.imported == 12, "\(report.lines)")
            #expect(report.collections["ChatMessage"]?.imported == 6)
            #expect(report.conversions.counts["Date"] ?? 0 > 0)
            // Relaxed Extended JSON writes small Int64 values as plain numbers (read as Int32).
            if format != "mongoexport-relaxed" { #expect(report.conversions.counts["Int64"] ?? 0 > 0) }

            let store = db.store()
            let blobs = BlobStore(client: db.client, content: PostgresBlobContent(client: db.client, logger: db.logger), logger: db.logger)
            var pictures = 0
            for collection in ImportHarness.collections {
                for source in try ImportHarness.documents(ImportHarness.file(format, collection)) {
                    let expected = try source.body(collection: collection, mapper: ImportHarness.expectedMapper)
                    let id = try DocumentPlacement.objectID(source.id)
                    let stored = try await store.body(of: ObjectKey(collection: collection, id: id))
                    #expect(stored == expected, "\(collection)/\(id)")
                    for reference in try BlobReference.references(in: .object(expected)) {
                        let blob = try #require(try await blobs.blob(reference.digest), "the blob \(reference.digest)")
                        #expect(blob.length == reference.length && blob.contentType == "image/jpeg")
                        pictures += 1
                    }
                }
            }
            #expect(pictures > 0, "the data set has photos")

            let again = try await ImportHarness.run(db, options)
            #expect(again.total.read == 12 && again.total.unchanged == 12 && again.total.imported == 0, "\(again.lines)")
            // Each object was written once: an import event for each one a trigger handles
            // (RChat's user-changed trigger reads imported Users; no trigger reads imported
            // Chatsters or messages), none for the second run.
            #expect(try await Self.importEvents(db) == ["User": 3])
        }
    }

    /// The import events recorded per collection, each object's once (else the count is -1).
    static func importEvents(_ db: TestDatabase) async throws -> [String: Int64] {
        var result: [String: Int64] = [:]
        let rows = try await db.client.query(
            """
            SELECT collection, count(*)::bigint, count(DISTINCT object_id)::bigint FROM psync_events
            WHERE operation = 'import' AND kind = 'object' GROUP BY collection
            """)
        for try await (collection, events, objects) in rows.decode((String, Int64, Int64).self) {
            result[collection] = events == objects ? events : -1
        }
        return result
    }

    /// How many accounts' import events were recorded.
    static func accountEvents(_ db: TestDatabase) async throws -> Int64 {
        for try await count in try await db.client.query(
            "SELECT count(*)::bigint FROM psync_events WHERE operation = 'import' AND kind = 'user'").decode(Int64.self)
        {
            return count
        }
        return 0
    }

    @Test("import events of objects and accounts are recorded for the application's triggers that handle them, every one while a trigger it does not know is registered, none with --no-triggers")
    func eventsFollowTheTriggers() async throws {
        try await TestDatabase.with { db in
            var options = ImportOptions(paths: [ImportHarness.file("mongoexport-relaxed", "ChatMessage")])
            options.usersFile = ImportHarness.rchat + "/users.json"
            options.triggers = false
            _ = try await ImportHarness.run(db, options)
            #expect(try await Self.importEvents(db) == [:])
            #expect(try await Self.accountEvents(db) == 0)
        }
        try await TestDatabase.with { db in
            // RChat's triggers read imported User records, and neither imported accounts (its
            // account trigger takes registrations and verifications) nor other objects.
            var options = ImportOptions(paths: [ImportHarness.folder("mongoexport-relaxed")])
            options.usersFile = ImportHarness.rchat + "/users.json"
            let report = try await ImportHarness.run(db, options)
            #expect(report.total.imported == 12 && report.users.imported == 3, "\(report.lines)")
            #expect(try await Self.importEvents(db) == ["User": 3])
            #expect(try await Self.accountEvents(db) == 0)
        }
        try await TestDatabase.with { db in
            // Another version of the application ran here with a trigger this one lacks: it
            // may read any event, so every one is recorded.
            try await TriggerLedger(store: db.store()).register("other.version-only")
            var options = ImportOptions(paths: [ImportHarness.folder("mongoexport-canonical")])
            options.usersFile = ImportHarness.rchat + "/users.json"
            let report = try await ImportHarness.run(db, options)
            #expect(report.total.imported == 12, "\(report.lines)")
            #expect(try await Self.importEvents(db) == ["User": 3, "Chatster": 3, "ChatMessage": 6])
            #expect(try await Self.accountEvents(db) == 3)
        }
    }

    @Test("a dry run writes nothing and reports what would be imported, per collection and partition")
    func dryRun() async throws {
        try await TestDatabase.with { db in
            var options = ImportOptions(paths: [ImportHarness.folder("mongodump")])
            options.dryRun = true
            options.usersFile = ImportHarness.rchat + "/users.json"
            let printed = ImportHarness.Printed()
            let report = try await ImportHarness.run(db, options, printed: printed)
            #expect(report.dryRun)
            #expect(report.total.imported == 12, "\(report.lines)")
            #expect(report.users.imported == 3)
            #expect(report.partitions["all-users=all-the-users"]?.imported == 3)
            #expect(report.conversions.counts["Binary (subtype 00)"] ?? 0 > 0)
            #expect(printed.tokens.withLock { $0 }.isEmpty)
            for table in ["psync_objects", "psync_events", "psync_blobs", "psync_users"] {
                for try await count in try await db.client.query(PostgresQuery(unsafeSQL: "SELECT count(*)::bigint FROM \(table)")).decode(Int64.self) {
                    #expect(count == 0, "\(table)")
                }
            }
        }
    }
}
