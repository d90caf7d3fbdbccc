import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

@Suite("Declared indexes")
struct ObjectIndexTests {
    @Test("indexes are created once, a GIN index without its pending list (also one made before with it), and searches use them")
    func created() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            // An index as an earlier version made it: with the pending list.
            try await db.client.query(
                """
                CREATE INDEX psync_ix_user_conversations_contains ON psync_objects
                USING gin ((body #> '{conversations}') jsonb_path_ops) WHERE collection = 'User'
                """, logger: db.logger)
            let indexes = [
                try ObjectIndex.arrayContains(collection: "User", path: "conversations"),
                try ObjectIndex.field(collection: "User", path: "userName"),
            ]
            try await store.createIndexes(indexes)
            try await store.createIndexes(indexes)  // again: nothing to do
            let rows = try await db.client.query(
                """
                SELECT c.relname, coalesce(array_to_string(c.reloptions, ','), '') FROM pg_class c
                WHERE c.relname LIKE 'psync_ix_%' ORDER BY 1
                """, logger: db.logger)
            var found: [String: String] = [:]
            for try await (name, options) in rows.decode((String, String).self) { found[name] = options }
            #expect(found == ["psync_ix_user_conversations_contains": "fastupdate=off", "psync_ix_user_username_field": ""])

            let home = partition("user=u1")
            try await store.apply([.put(key("User", "u1"), body: ["userName": "ann", "conversations": [["id": "c1"], ["id": "c2"]]])], in: home)
            let members = try await store.withWriteTransaction(author: "test") { transaction in
                try await transaction.find("User", whereArray: "conversations", contains: ["id": "c2"]).map(\.object.key)
            }
            #expect(members == [key("User", "u1")])
        }
    }
}
