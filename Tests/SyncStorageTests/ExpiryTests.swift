import Foundation
import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// Objects with `@expiresAt` are deleted when their time has come, as a client's delete.
@Suite("Expiry", .timeLimit(.minutes(30)))
struct ExpiryTests {
    static func at(_ offset: TimeInterval) -> JSONValue { .string(ObjectExpiry.string(Date(timeIntervalSinceNow: offset))) }

    @Test("due objects are deleted with events by the expiry author; moved, removed or future times are not")
    func expireDue() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("room=r1")
            try await store.apply([
                .put(key("Note", "due"), body: ["text": "bye", ObjectExpiry.field: Self.at(-1)]),
                .put(key("Note", "later"), body: ["text": "stay", ObjectExpiry.field: Self.at(3600)]),
                .put(key("Note", "moved"), body: ["text": "moved", ObjectExpiry.field: Self.at(-1)]),
                .put(key("Note", "removed"), body: ["text": "removed", ObjectExpiry.field: Self.at(-1)]),
                .put(key("Note", "plain"), body: ["text": "plain"]),
            ], in: room)
            try await store.apply([
                .set(key("Note", "moved"), path: Path.field(ObjectExpiry.field), value: Self.at(3600)),
                .unset(key("Note", "removed"), path: Path.field(ObjectExpiry.field)),
            ], in: room)
            #expect(try await store.expireDue() == 1)
            #expect(try await store.expireDue() == 0)
            let objects = try await db.objects(in: room)
            #expect(objects[key("Note", "due")]?.body == nil)
            for id in ["later", "moved", "removed", "plain"] { #expect(objects[key("Note", id)]?.body != nil, "\(id)") }
            #expect(try await db.scalar(
                "SELECT count(*)::bigint FROM psync_events WHERE operation = 'delete' AND object_id = 'due' AND author = 'server:expiry'") == 1)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_expiries") == 2)
            #expect(try await store.nextExpiry() != nil)
        }
    }

    @Test("PostgreSQL reads @expiresAt exactly as the server does: the same instants, and no loose string read at all")
    func databaseAgreesWithServer() async throws {
        try await TestDatabase.with { db in
            let texts = RFC3339Vectors.refused.flatMap { [$0.text, $0.twin] } + RFC3339Vectors.instants.map(\.text)
            var disagreements: [String] = []
            for text in texts {
                let body = JSONValue.object([ObjectExpiry.field: .string(text)])
                let swift = RFC3339.date(text)
                var database: Double?
                var raised = false
                do {
                    let rows = try await db.client.query(
                        "SELECT extract(epoch FROM psync_expiry_of(\(body.jsonString)::jsonb))::float8", logger: db.logger)
                    for try await seconds in rows.decode(Double?.self) { database = seconds }
                } catch {
                    raised = true
                }
                switch (swift, database) {
                case (nil, nil) where raised: continue
                case (let swift?, let database?) where abs(swift.timeIntervalSince1970 - database) < 0.000_001: continue
                default: disagreements.append("\(text): server \(swift.map { "\($0.timeIntervalSince1970)" } ?? "refuses"), database \(database.map { "\($0)" } ?? (raised ? "raises" : "NULL"))")
                }
            }
            #expect(disagreements.isEmpty, "\(disagreements)")
            // Without the field, or for a tombstone, no expiry and no error.
            let rows = try await db.client.query("SELECT psync_expiry_of('{\"a\": 1}'::jsonb) IS NULL AND psync_expiry_of(NULL) IS NULL", logger: db.logger)
            for try await none in rows.decode(Bool.self) { #expect(none) }
        }
    }

    @Test("thousands of objects in hundreds of partitions expire in one transaction")
    func manyAtOnce() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let past = Self.at(-5)
            for room in 0..<300 {
                let operations = (0..<10).map { n in SyncOperation.put(key("Note", "r\(room)-\(n)"), body: [ObjectExpiry.field: past]) }
                try await store.apply(operations, in: partition("room=r\(room)"))
            }
            #expect(try await store.expireDue(limit: 5_000) == 3_000)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_objects WHERE body IS NOT NULL") == 0)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_expiries") == 0)
        }
    }

    @Test("an expiry time that is not an RFC 3339 date-time is refused")
    func malformed() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            for value: JSONValue in ["tomorrow", 1_764_000_000, "2026-11-25", "2026-11-25 12:00:00"] {
                let code = await errorCode {
                    try await store.apply([.put(key("Note", "n"), body: [ObjectExpiry.field: value])], in: partition("room=r1"))
                }
                #expect(code == .validationFailed, "\(value)")
            }
            for text in ["2026-11-25T12:00:00Z", "2026-11-25T12:00:00.250+01:00"] {
                try await store.apply([.put(key("Note", text), body: [ObjectExpiry.field: .string(text)])], in: partition("room=r1"))
            }
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_expiries") == 2)
        }
    }
}
