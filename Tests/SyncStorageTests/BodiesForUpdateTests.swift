import PartitionSync
import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

@Suite("Bodies read for update", .timeLimit(.minutes(30)))
struct BodiesForUpdateTests {
    static let room = partition("user=u1")
    static let record = key("User", "u1")
    static let elsewhere = key("User", "u2")

    /// Runs `body` with a database holding User `u1` (a record of ~20 kB) in `user=u1` and
    /// User `u2` in `user=u2`.
    static func withRecords(_ body: @escaping @Sendable (TestDatabase, ObjectStore) async throws -> Void) async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let members: [JSONValue] = (0..<400).map { .string("member-\($0)@example.com") }
            try await store.apply([.put(record, body: ["presence": "Off-Line", "members": .array(members)])], in: room)
            try await store.apply([.put(elsewhere, body: ["presence": "Off-Line"])], in: partition("user=u2"))
            try await body(db, store)
        }
    }

    @Test("a record read for update and then written is read once; read plainly, the write reads it again")
    func readOnce() async throws {
        try await Self.withRecords { _, store in
            let (room, record) = (Self.room, Self.record)
            let set = SyncOperation.set(record, path: path("presence"), value: "On-Line")
            let plain = try await store.withWriteTransaction(author: "tester") { transaction in
                transaction.defersWrites = true
                _ = try await transaction.bodies(of: [record])
                let once = transaction.bytesRead
                try await transaction.apply([set], in: room)
                return (once, transaction.bytesRead)
            }
            #expect(plain.0 > 10_000)
            #expect(plain.1 == 2 * plain.0)

            let forUpdate = try await store.withWriteTransaction(author: "tester") { transaction in
                transaction.defersWrites = true
                let bodies = try await transaction.bodiesForUpdate(of: [record], in: room)
                #expect(bodies[record]?["presence"] == "On-Line")
                let once = transaction.bytesRead
                try await transaction.apply([.set(record, path: path("presence"), value: "Away")], in: room)
                return (once, transaction.bytesRead)
            }
            #expect(forUpdate.0 > 10_000)
            #expect(forUpdate.1 == forUpdate.0)
            #expect(try await store.objects([record]).first?.object.body?["presence"] == "Away")
        }
    }

    @Test("the partition stays locked until the commit: another writer's lock is not granted; an object of another partition is left out")
    func locked() async throws {
        try await Self.withRecords { _, store in
            let (room, record, elsewhere) = (Self.room, Self.record, Self.elsewhere)
            try await store.withWriteTransaction(author: "tester") { transaction in
                let bodies = try await transaction.bodiesForUpdate(of: [record, elsewhere], in: room)
                #expect(Set(bodies.keys) == [record])
                await #expect {
                    try await store.withWriteTransaction(author: "other") { other in
                        try await other.lockAndLoad([room], [], lockTimeout: .milliseconds(20))
                    }
                } throws: { error in
                    (error as? PSQLError)?.serverInfo?[.sqlState] == "55P03"
                }
            }
            // Committed: the lock is let go of.
            try await store.withWriteTransaction(author: "other") { other in
                try await other.lockAndLoad([room], [], lockTimeout: .seconds(30))
            }
        }
    }
}
