import PostgresNIO
import SyncProtocol
@testable import SyncStorage
import SyncTesting
import Testing

@Suite("Declared indexes")
struct ObjectIndexTests {
    static func indexes(_ db: TestDatabase) async throws -> [String: String] {
        let rows = try await db.client.query(
            """
            SELECT c.relname, coalesce(array_to_string(c.reloptions, ','), '') FROM pg_class c
            WHERE c.relname LIKE 'psync_ix_%' ORDER BY 1
            """, logger: db.logger)
        var found: [String: String] = [:]
        for try await (name, options) in rows.decode((String, String).self) { found[name] = options }
        return found
    }

    @Test("indexes are created once, GIN ones without their pending list (also one made before with it); undeclared ones are dropped")
    func created() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            // An index as an earlier version made it: with the pending list.
            try await db.client.query(
                """
                CREATE INDEX psync_ix_user_conversations_contains ON psync_objects
                USING gin ((body #> '{conversations}') jsonb_path_ops) WHERE collection = 'User'
                """, logger: db.logger)
            let userName = try ObjectIndex.field(collection: "User", path: "userName")
            let contains = try ObjectIndex.arrayContains(collection: "User", path: "conversations")
            try await store.createIndexes([contains, userName])
            try await store.createIndexes([contains, userName])  // again: nothing to do
            #expect(try await Self.indexes(db) == ["psync_ix_user_conversations_contains": "fastupdate=off", "psync_ix_user_username_field": ""])

            // A later version declares the element index instead: the other one goes.
            let elements = try ObjectIndex.arrayElements(collection: "User", path: "conversations", field: "id")
            try await store.createIndexes([userName, elements])
            #expect(try await Self.indexes(db) == ["psync_ix_user_conversations_id_elements": "fastupdate=off", "psync_ix_user_username_field": ""])
        }
    }

    @Test("a search of an array's element field finds its objects (staged changes too) and is answered through its index")
    func elementSearch() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.createIndexes([try ObjectIndex.arrayElements(collection: "User", path: "conversations", field: "id")])
            // Many users in other rooms, so the planner prefers the index for a selective search.
            try await db.client.query(
                """
                INSERT INTO psync_objects (collection, id, partition, version, body)
                SELECT 'User', 'bulk-' || n, 'user=bulk-' || n, 1, jsonb_build_object('conversations', jsonb_build_array(jsonb_build_object('id', 'room-' || n, 'unreadCount', 0)))
                FROM generate_series(1, 2000) AS n
                """, logger: db.logger)
            try await db.client.query("ANALYZE psync_objects", logger: db.logger)
            try await store.apply([.put(key("User", "u1"), body: ["conversations": [["id": "c1", "unreadCount": 0], ["id": "c2"]]])], in: partition("user=u1"))
            try await store.apply([.put(key("User", "u2"), body: ["conversations": [["id": "c2"]]])], in: partition("user=u2"))
            let found = try await store.withWriteTransaction(author: "test") { transaction in
                transaction.defersWrites = true
                let before = try await transaction.keys(of: "User", whereArray: "conversations", field: "id", is: "c2").map(\.key)
                // A staged change leaves the answer and one joins it, without a write.
                try await transaction.apply([.put(key("User", "u2"), body: ["conversations": [["id": "c3"]]])], in: partition("user=u2"))
                try await transaction.apply([.put(key("User", "u3"), body: ["conversations": [["id": "c2"]]])], in: partition("user=u3"))
                let after = try await transaction.keys(of: "User", whereArray: "conversations", field: "id", is: "c2").map(\.key)
                return (before, after)
            }
            #expect(found.0 == [key("User", "u1"), key("User", "u2")])
            #expect(found.1 == [key("User", "u1"), key("User", "u3")])

            var plan: [String] = []
            let expression = ObjectIndex.elementsExpression(path: "conversations", field: "id")
            let rows = try await db.client.query(PostgresQuery(unsafeSQL: """
                EXPLAIN SELECT id FROM psync_objects WHERE collection = 'User' AND body IS NOT NULL AND \(expression) @> '["c2"]'
                """), logger: db.logger)
            for try await line in rows.decode(String.self) { plan.append(line) }
            #expect(plan.contains { $0.contains("psync_ix_user_conversations_id_elements") }, "\(plan)")
        }
    }
}
