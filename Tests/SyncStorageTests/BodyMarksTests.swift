import Crypto
import Foundation
import SyncProtocol
@testable import SyncStorage
import SyncTesting
import Testing

/// The marks stored beside each body (migration 0017) say whether the blob and expiry triggers
/// must look at it; unknown marks make them search the body as before.
@Suite("Body marks", .timeLimit(.minutes(30)))
struct BodyMarksTests {
    static func marks(_ text: String) -> Int16? { BodyMarks.of(Array(text.utf8))?.rawValue }

    @Test("found on the text: names in quotes as keys anywhere (or values, which only cost a look); a \\u escape makes them unknown")
    func text() {
        #expect(Self.marks(#"{"a":1}"#) == 0)
        #expect(Self.marks("") == 0)
        #expect(Self.marks(#"{"p":{"q":[{"@blob":{"digest":"x"}}]}}"#) == 1)
        #expect(Self.marks(#"{"@expiresAt":"2030-01-01T00:00:00Z"}"#) == 2)
        #expect(Self.marks(#"{"@expiresAt":"2030-01-01T00:00:00Z","f":{"@blob":{}}}"#) == 3)
        #expect(Self.marks(#"{"note":"@blob"}"#) == 1)
        // Other names that start alike, and the names without their quotes, mark nothing.
        #expect(Self.marks(#"{"@blobs":1,"@expiresAtX":2,"x@blob":3,"t":"a @blob b"}"#) == 0)
        #expect(Self.marks(#"{"@":"@","":"@"}"#) == 0)
        // An escape could spell a name the search does not see.
        #expect(Self.marks(#"{"\u0040blob":{}}"#) == nil)
        #expect(Self.marks(#"{"t":"\u00e9"}"#) == nil)
        // An escaped backslash before a u is no escape of the u.
        #expect(Self.marks(#"{"t":"a\\u"}"#) == 0)
        #expect(Self.marks(#"{"t":"a\\\u0041"}"#) == nil)
        // The writer's text of a body with a blob reference and an expiry.
        let reference = BlobReference(digest: BlobDigest(sha256: SHA256.hash(data: [1, 2, 3])), length: 3, contentType: "image/png")
        let body: JSONValue = ["photo": ["nested": [reference.json]], ObjectExpiry.field: "2030-01-01T00:00:00Z"]
        #expect(BodyMarks.of(body.jsonBytes)?.rawValue == 3)
    }

    @Test("the stored marks: 0, 1, 2 and 0 for a tombstone; unknown for a body the text cannot say, whose expiry is still tracked")
    func stored() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("room=r1")
            let blobs = BlobCollectionTests.blobs(db)
            let reference = try await BlobCollectionTests.store(Array(repeating: 7, count: 100), in: blobs)
            let soon = JSONValue.string(ObjectExpiry.string(Date(timeIntervalSinceNow: 3_600)))
            try await store.apply([
                .put(key("Note", "plain"), body: ["text": "plain"]),
                .put(key("Note", "blob"), body: ["photo": reference.json]),
                .put(key("Note", "expiring"), body: ["text": "soon", ObjectExpiry.field: soon]),
                .put(key("Note", "escaped"), body: ["text": "a\u{1}b", ObjectExpiry.field: soon]),
                .put(key("Note", "gone"), body: ["photo": reference.json]),
            ], in: room)
            try await store.apply([.delete(key("Note", "gone"))], in: room)
            func marks(_ id: String) async throws -> Int64 {
                try await db.scalar("SELECT coalesce(marks, -1)::bigint FROM psync_objects WHERE id = '\(id)'")
            }
            #expect(try await marks("plain") == 0)
            #expect(try await marks("blob") == 1)
            #expect(try await marks("expiring") == 2)
            #expect(try await marks("escaped") == -1)
            #expect(try await marks("gone") == 0)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_expiries WHERE id IN ('expiring', 'escaped')") == 2)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_refs WHERE released_at IS NULL") == 1)
        }
    }

    @Test("a row of unknown marks (written before them) is searched: its reference is released and its expiry removed when rewritten without them")
    func unknownRows() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("room=r1")
            let blobs = BlobCollectionTests.blobs(db)
            let reference = try await BlobCollectionTests.store(Array(repeating: 8, count: 100), in: blobs)
            let soon = JSONValue.string(ObjectExpiry.string(Date(timeIntervalSinceNow: 3_600)))
            try await store.apply([
                .put(key("Note", "old"), body: ["photo": reference.json, ObjectExpiry.field: soon]),
                .put(key("Note", "older"), body: ["photo": reference.json, ObjectExpiry.field: soon]),
            ], in: room)
            // As a row written before migration 0017 has them.
            _ = try await db.scalar("WITH u AS (UPDATE psync_objects SET marks = NULL WHERE collection = 'Note' RETURNING 1) SELECT count(*)::bigint FROM u")
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_expiries") == 2)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_refs WHERE released_at IS NULL") == 2)
            // The new bodies hold neither: only the search of the old ones finds what to let go of.
            try await store.apply([
                .unset(key("Note", "old"), path: Path.field("photo")), .unset(key("Note", "old"), path: Path.field(ObjectExpiry.field)),
            ], in: room)
            #expect(try await db.scalar("SELECT marks::bigint FROM psync_objects WHERE id = 'old'") == 0)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_expiries WHERE id = 'old'") == 0)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_refs WHERE id = 'old' AND released_at IS NULL") == 0)
            try await store.apply([.delete(key("Note", "older"))], in: room)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_expiries") == 0)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_refs WHERE released_at IS NULL") == 0)
        }
    }

    @Test("psync_write as the previous build calls it (a rolling upgrade) stores unknown marks, so the triggers search what it wrote")
    func previousBuild() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("room=r1")
            let blobs = BlobCollectionTests.blobs(db)
            let reference = try await BlobCollectionTests.store(Array(repeating: 9, count: 100), in: blobs)
            try await store.apply([.put(key("Note", "n"), body: ["text": "plain"])], in: room)
            #expect(try await db.scalar("SELECT marks::bigint FROM psync_objects WHERE id = 'n'") == 0)
            // The 25 arguments of migration 0006's psync_write: the body now cites the blob.
            let body = JSONValue.object(["_id": "n", "partition": "room=r1", "photo": reference.json]).jsonString.replacingOccurrences(of: "'", with: "''")
            _ = try await db.scalar("""
                SELECT r_written FROM psync_write(
                    ARRAY['Note'], ARRAY['n'], ARRAY['room=r1'], ARRAY[100::bigint], ARRAY['\(body)'::jsonb], ARRAY[false],
                    '{}'::text[], '{}'::text[], '{}'::text[], '{}'::jsonb[], '{}'::text[], NULL::bigint,
                    '{}'::text[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::text[], '{}'::bigint[],
                    '{}'::text[], '{}'::jsonb[], '{}'::jsonb[], '{}'::jsonb[], '{}'::jsonb[], '{}'::integer[], '{}'::text[])
                """)
            #expect(try await db.scalar("SELECT coalesce(marks, -1)::bigint FROM psync_objects WHERE id = 'n'") == -1)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_refs WHERE id = 'n' AND released_at IS NULL") == 1)
            // And this build's next write of it lets the reference go, found in the old body.
            try await store.apply([.unset(key("Note", "n"), path: Path.field("photo"))], in: room)
            #expect(try await db.scalar("SELECT marks::bigint FROM psync_objects WHERE id = 'n'") == 0)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_refs WHERE id = 'n' AND released_at IS NULL") == 0)
        }
    }
}
