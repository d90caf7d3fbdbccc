import PartitionSync
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

    /// The element indexes whose triggers are installed, with how many triggers each has.
    static func elementTriggers(_ db: TestDatabase) async throws -> [String: Int] {
        let rows = try await db.client.query(
            """
            SELECT regexp_replace(tgname, '_(insert|update|delete)$', ''), count(*)::int FROM pg_trigger
            WHERE tgrelid = 'psync_objects'::regclass AND NOT tgisinternal AND starts_with(tgname, 'psync_ix_') GROUP BY 1
            """, logger: db.logger)
        var found: [String: Int] = [:]
        for try await (name, count) in rows.decode((String, Int).self) { found[name] = count }
        return found
    }

    /// Every entry of element indexes, as "index value collection/id", sorted.
    static func entries(_ db: TestDatabase) async throws -> [String] {
        let rows = try await db.client.query(
            "SELECT index_name || ' ' || value::text || ' ' || collection || '/' || id FROM psync_element_entries ORDER BY 1",
            logger: db.logger)
        var found: [String] = []
        for try await entry in rows.decode(String.self) { found.append(entry) }
        return found
    }

    @Test("indexes are created once, GIN ones without their pending list (also one made before with it); undeclared ones are dropped, element indexes' triggers and entries too")
    func created() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            // Indexes as earlier versions made them: with the pending list, and an element
            // index that was a GIN index of the body.
            try await db.client.query(
                """
                CREATE INDEX psync_ix_user_conversations_contains ON psync_objects
                USING gin ((body #> '{conversations}') jsonb_path_ops) WHERE collection = 'User'
                """, logger: db.logger)
            try await db.client.query(
                """
                CREATE INDEX psync_ix_user_conversations_id_elements ON psync_objects
                USING gin ((jsonb_path_query_array(body, '$."conversations"[*]."id"')) jsonb_path_ops) WHERE collection = 'User'
                """, logger: db.logger)
            let userName = ObjectIndex.field(collection: "User", path: "userName")
            let contains = ObjectIndex.arrayContains(collection: "User", path: "conversations")
            try await store.createIndexes([contains, userName])
            try await store.createIndexes([contains, userName])  // again: nothing to do
            #expect(try await Self.indexes(db) == ["psync_ix_user_conversations_contains": "fastupdate=off", "psync_ix_user_username_field": ""])
            #expect(try await Self.elementTriggers(db).isEmpty)

            // A later version declares the element index instead: the other one goes, the
            // element index's triggers come, and the objects stored before are entered.
            try await store.apply([.put(key("User", "u1"), body: ["conversations": [["id": "c1"], ["id": "c2"]]])], in: partition("user=u1"))
            let elements = ObjectIndex.arrayElements(collection: "User", path: "conversations", field: "id")
            try await store.createIndexes([userName, elements])
            try await store.createIndexes([userName, elements])  // again: nothing to do
            #expect(try await Self.indexes(db) == ["psync_ix_user_username_field": ""])
            #expect(try await Self.elementTriggers(db) == ["psync_ix_user_conversations_id_elements": 3])
            let name = "psync_ix_user_conversations_id_elements"
            #expect(try await Self.entries(db) == ["\(name) \"c1\" User/u1", "\(name) \"c2\" User/u1"])

            // And a version without it: its triggers and entries go; writes no longer enter any.
            try await store.createIndexes([userName])
            #expect(try await Self.elementTriggers(db).isEmpty)
            #expect(try await Self.entries(db).isEmpty)
            try await store.apply([.put(key("User", "u2"), body: ["conversations": [["id": "c1"]]])], in: partition("user=u2"))
            #expect(try await Self.entries(db).isEmpty)
            // The search still answers, by scanning.
            let found = try await store.withWriteTransaction(author: "test") { transaction in
                try await transaction.keys(.array("User", path: "conversations", field: "id", is: "c1")).map(\.key)
            }
            #expect(Set(found) == [key("User", "u1"), key("User", "u2")])
        }
    }

    @Test("an index whose name PostgreSQL would cut short is refused with invalid_path")
    func longNames() throws {
        let long = String(repeating: "a", count: 31)
        #expect(throws: SyncError.self) { try ObjectIndex.arrayElements(collection: "User", path: long, field: "id").check() }
        #expect(throws: SyncError.self) { try ObjectIndex.field(collection: "User", path: long + long).check() }
        // At the limit: 63 bytes for an index, 56 for an element index (its triggers add 7).
        let field = ObjectIndex.field(collection: "User", path: String(repeating: "a", count: 63 - "psync_ix_user__field".count))
        try field.check()
        #expect(field.name.utf8.count == 63)
        let elements = ObjectIndex.arrayElements(collection: "User", path: String(repeating: "a", count: 56 - "psync_ix_user__id_elements".count), field: "id")
        try elements.check()
        #expect(elements.name.utf8.count == 56)
        do {
            try ObjectIndex.arrayElements(collection: "User", path: long, field: "id").check()
        } catch {
            #expect(error.code == .invalidPath)
        }
    }

    @Test("a declaration with a bad path, field or collection is refused, naming it, and nothing is created")
    func badDeclarations() async throws {
        for bad in [
            ObjectIndex.field(collection: "User", path: "user name"),
            ObjectIndex.arrayContains(collection: "User", path: "a..b"),
            ObjectIndex.arrayElements(collection: "User", path: "conversations", field: "id'; DROP TABLE x; --"),
            ObjectIndex.field(collection: "", path: "userName"),
        ] {
            #expect(throws: SyncError.self) { try bad.check() }
        }
        try await TestDatabase.with { db in
            let store = db.store()
            let good = ObjectIndex.field(collection: "User", path: "userName")
            let bad = ObjectIndex.arrayElements(collection: "User", path: "conversations", field: "i-d")
            do {
                try await store.createIndexes([good, bad])
                Issue.record("a bad declaration was accepted")
            } catch let error as SyncError {
                #expect(error.code == .invalidPath)
                #expect(error.message.contains("User at conversations"), "\(error.message)")
            }
            var names: [String] = []
            let rows = try await db.client.query("SELECT relname::text FROM pg_class WHERE starts_with(relname, 'psync_ix_')", logger: db.logger)
            for try await name in rows.decode(String.self) { names.append(name) }
            #expect(names.isEmpty, "created before the refusal: \(names)")
        }
    }

    @Test("a search of an array's element field finds its objects (staged changes too) through the index's entries")
    func elementSearch() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.createIndexes([ObjectIndex.arrayElements(collection: "User", path: "conversations", field: "id")])
            try await store.apply([.put(key("User", "u1"), body: ["conversations": [["id": "c1", "unreadCount": 0], ["id": "c2"]]])], in: partition("user=u1"))
            try await store.apply([.put(key("User", "u2"), body: ["conversations": [["id": "c2"]]])], in: partition("user=u2"))
            let found = try await store.withWriteTransaction(author: "test") { transaction in
                transaction.defersWrites = true
                let before = try await transaction.keys(.array("User", path: "conversations", field: "id", is: "c2")).map(\.key)
                // A staged change leaves the answer and one joins it, without a write.
                try await transaction.apply([.put(key("User", "u2"), body: ["conversations": [["id": "c3"]]])], in: partition("user=u2"))
                try await transaction.apply([.put(key("User", "u3"), body: ["conversations": [["id": "c2"]]])], in: partition("user=u3"))
                let after = try await transaction.keys(.array("User", path: "conversations", field: "id", is: "c2")).map(\.key)
                return (before, after)
            }
            #expect(found.0 == [key("User", "u1"), key("User", "u2")])
            #expect(found.1 == [key("User", "u1"), key("User", "u3")])

            // The answer comes from the entries: without u1's, the search does not find it.
            try await db.client.query("DELETE FROM psync_element_entries WHERE id = 'u1'", logger: db.logger)
            let without = try await store.withWriteTransaction(author: "test") { transaction in
                try await transaction.keys(.array("User", path: "conversations", field: "id", is: "c2")).map(\.key)
            }
            #expect(without == [key("User", "u3")])
        }
    }

    @Test("element searches of many values, read in one statement, answer as one search per value does, before and after a change, staged or written")
    func manyValuesAtOnce() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.createIndexes([ObjectIndex.arrayElements(collection: "User", path: "conversations", field: "id")])
            try await store.apply([.put(key("User", "u1"), body: ["conversations": [["id": "c1"], ["id": "c2"], ["id": 7]]])], in: partition("user=u1"))
            let values: [JSONValue] = ["c1", "c2", "c3", 7, "c2"]
            let searches = values.map { ObjectSearch.array("User", path: "conversations", field: "id", is: $0) }
            for defers in [false, true] {
                try await store.apply([.put(key("User", "u2"), body: ["conversations": [["id": "c2"]]])], in: partition("user=u2"))
                try await store.apply([.delete(key("User", "u3"))], in: partition("user=u3"))
                let (together, alone) = try await store.withWriteTransaction(author: "test") { transaction in
                    transaction.defersWrites = defers
                    // A change before the search: staged (deferred) or written.
                    try await transaction.apply([.put(key("User", "u3"), body: ["conversations": [["id": "c3"]]])], in: partition("user=u3"))
                    let together = try await transaction.keys(searches).map { $0.map(\.key) }
                    // Then a change after it, which the next searches see.
                    try await transaction.apply([.put(key("User", "u2"), body: ["conversations": []])], in: partition("user=u2"))
                    let after = try await transaction.keys(searches).map { $0.map(\.key) }
                    var alone: [[ObjectKey]] = []
                    for search in searches { alone.append(try await transaction.keys(search).map(\.key)) }
                    return (together + after, alone)
                }
                let (u1, u2, u3) = (key("User", "u1"), key("User", "u2"), key("User", "u3"))
                #expect(together == [[u1], [u1, u2], [u3], [u1], [u1, u2], [u1], [u1], [u3], [u1], [u1]], "defers: \(defers)")
                #expect(Array(together.suffix(5)) == alone, "defers: \(defers)")
            }
        }
    }

    @Test("field searches of many names, read in one statement, answer as one search per name does, before and after a change, staged or written")
    func manyNamesAtOnce() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.createIndexes([ObjectIndex.field(collection: "User", path: "userName")])
            try await store.apply([.put(key("User", "u1"), body: ["userName": "ann"])], in: partition("user=u1"))
            try await store.apply([.put(key("Chatster", "u1"), body: ["userName": "ann"])], in: partition("all=users"))
            let names = ["ann", "bob", "cy", "ann", "nobody"]
            let searches = names.map { ObjectSearch.field("User", path: "userName", in: [$0]) }
            for defers in [false, true] {
                try await store.apply([.put(key("User", "u2"), body: ["userName": "bob"])], in: partition("user=u2"))
                try await store.apply([.delete(key("User", "u3"))], in: partition("user=u3"))
                let (together, alone) = try await store.withWriteTransaction(author: "test") { transaction in
                    transaction.defersWrites = defers
                    // A change before the search: staged (deferred) or written.
                    try await transaction.apply([.put(key("User", "u3"), body: ["userName": "cy"])], in: partition("user=u3"))
                    let together = try await transaction.keys(searches).map { $0.map(\.key) }
                    // Then a change after it, which the next searches see: bob renamed ann.
                    try await transaction.apply([.put(key("User", "u2"), body: ["userName": "ann"])], in: partition("user=u2"))
                    let after = try await transaction.keys(searches).map { $0.map(\.key) }
                    var alone: [[ObjectKey]] = []
                    for search in searches { alone.append(try await transaction.keys(search).map(\.key)) }
                    return (together + after, alone)
                }
                let (u1, u2, u3) = (key("User", "u1"), key("User", "u2"), key("User", "u3"))
                let expected: [[ObjectKey]] = [[u1], [u2], [u3], [u1], [], [u1, u2], [], [u3], [u1, u2], []]
                #expect(together == expected, "defers: \(defers)")
                #expect(Array(together.suffix(5)) == alone, "defers: \(defers)")
            }
        }
    }

    @Test("element entries follow every write, and a rewrite that keeps the values writes none")
    func entriesFollowWrites() async throws {
        try await TestDatabase.with { db in
            let indexed = db.store()
            try await indexed.createIndexes([ObjectIndex.arrayElements(collection: "User", path: "conversations", field: "id")])
            // A store that has not declared the index answers the same searches by scanning.
            let scanning = db.store()
            var generator = SystemRandomNumberGenerator()
            let values: [JSONValue] = ["a", "b", "c", 1, 1.5, true, ["x": 1]]
            func conversations() -> JSONValue {
                switch Int.random(in: 0..<10, using: &generator) {
                case 0: return "not an array"
                case 1: return ["id": values.randomElement()!]  // lax mode: an object is an array of one
                default:
                    return .array((0..<Int.random(in: 0...4, using: &generator)).map { _ in
                        Bool.random() ? ["id": values.randomElement()!, "unreadCount": 0] : (Bool.random() ? ["name": "no id"] : 7)
                    })
                }
            }
            for round in 0..<40 {
                var operations: [Partition: [SyncOperation]] = [:]
                for _ in 0..<4 {
                    let id = "u\(Int.random(in: 0..<8, using: &generator))"
                    let user = key("User", id)
                    let operation: SyncOperation = switch Int.random(in: 0..<6, using: &generator) {
                    case 0: .delete(user)
                    case 1: .put(key("Chatster", id), body: ["conversations": conversations()])
                    case 2: .increment(user, path: path("conversations[0].unreadCount"), by: 1)
                    default: .put(user, body: ["conversations": conversations(), "round": .int(Int64(round))])
                    }
                    operations[partition("user=\(id)"), default: []].append(operation)
                }
                // Some operations fail (an increment of a missing field): the whole batch is
                // then rolled back, entries too, which the comparison below checks as well.
                _ = try? await indexed.withWriteTransaction(author: "test") { transaction in
                    try await transaction.apply(operations)
                }
                for value in values {
                    let byEntries = try await indexed.withWriteTransaction(author: "test") { transaction in
                        try await transaction.keys(.array("User", path: "conversations", field: "id", is: value)).map(\.key)
                    }
                    let byScan = try await scanning.withWriteTransaction(author: "test") { transaction in
                        try await transaction.keys(.array("User", path: "conversations", field: "id", is: value)).map(\.key)
                    }
                    #expect(Set(byEntries) == Set(byScan), "round \(round), value \(value)")
                }
            }

            // Raising an unread count leaves the entries as they were (same row versions).
            try await indexed.apply([.put(key("User", "steady"), body: ["conversations": [["id": "s1", "unreadCount": 0], ["id": "s2", "unreadCount": 0]]])], in: partition("user=steady"))
            func versions() async throws -> [String] {
                let rows = try await db.client.query("SELECT ctid::text || xmin::text FROM psync_element_entries WHERE id = 'steady' ORDER BY value", logger: db.logger)
                var found: [String] = []
                for try await version in rows.decode(String.self) { found.append(version) }
                return found
            }
            let before = try await versions()
            #expect(before.count == 2)
            try await indexed.apply([.increment(key("User", "steady"), path: path("conversations[id=s2].unreadCount"), by: 1)], in: partition("user=steady"))
            #expect(try await versions() == before)
            // Leaving a conversation removes its entry and keeps the other's.
            try await indexed.apply([.put(key("User", "steady"), body: ["conversations": [["id": "s2", "unreadCount": 1]]])], in: partition("user=steady"))
            let after = try await versions()
            #expect(after.count == 1 && before.contains(after[0]))
        }
    }
}
