import PartitionSync
import SyncProtocol
@testable import SyncStorage
import Testing

/// What an import's bulk path takes into a write transaction's record, without PostgreSQL.
@Suite("Write record: new objects")
struct WriteRecordNewObjectsTests {
    static let room = partition("room=a")
    static let other = partition("room=b")

    static func locked() -> WriteRecord {
        var record = WriteRecord(author: "service:import", depth: 0)
        record.versions = [room: 4, other: 9]
        record.clocks = [room: 12, other: 30]
        return record
    }

    static func object(_ id: String, _ n: Int64, in partition: Partition = room) -> NewObject {
        NewObject(key: key("Doc", id), partition: partition, body: ["n": .int(n)])
    }

    /// The code of the refusal `body` throws, `nil` when it throws none.
    static func refusal(_ body: () throws -> ObjectChange?) -> SyncError.Code? {
        do {
            _ = try body()
            return nil
        } catch {
            return (error as? SyncError)?.code
        }
    }

    @Test("an object the record does not know is created: absent before, the engine's fields set, encoded")
    func created() throws {
        let change = try #require(try Self.locked().newObject(Self.object("a", 1), limits: Limits()))
        #expect(change.before == .absent)
        #expect(change.after == .live(["n": 1, "_id": "a", "partition": "room=a"]))
        let encoded = try #require(change.encodedBody)
        #expect(try JSONParser().parse(encoded) == .object(["n": 1, "_id": "a", "partition": "room=a"]))
    }

    @Test("an object the batch holds already: the same body is unchanged, another refused, another partition a mismatch")
    func known() throws {
        var record = Self.locked()
        let first = try #require(try record.newObject(Self.object("a", 1), limits: Limits()))
        record.known[first.key] = (Self.room.description, first.after)
        #expect(try record.newObject(Self.object("a", 1), limits: Limits()) == nil)
        #expect(Self.refusal { try record.newObject(Self.object("a", 2), limits: Limits()) } == ObjectStore.importConflict)
        #expect(Self.refusal { try record.newObject(Self.object("a", 1, in: Self.other), limits: Limits()) } == SyncError.Code.partitionMismatch)
        // A key read from the database as deleted stays deleted.
        record.known[key("Doc", "d")] = (Self.room.description, .deleted)
        #expect(Self.refusal { try record.newObject(Self.object("d", 1), limits: Limits()) } == ObjectStore.importConflict)
    }

    @Test("the storage limits apply to a new object")
    func limits() {
        var limits = Limits()
        limits.maximumBodyBytes = 16
        let large = NewObject(key: key("Doc", "a"), partition: Self.room, body: ["text": .string(String(repeating: "x", count: 64))])
        #expect(Self.refusal { try Self.locked().newObject(large, limits: limits) } == SyncError.Code.payloadTooLarge)
    }

    @Test("inserted objects are let go of at once: the commit names their partitions and versions without their changes")
    func insertedNew() throws {
        var record = Self.locked()
        for id in ["a", "b"] {
            record.insertedNew(try #require(try record.newObject(Self.object(id, 1), limits: Limits())), in: Self.room, keeping: nil)
        }
        #expect(record.changes.isEmpty && record.staged.isEmpty && record.touched.isEmpty && record.events.isEmpty)
        #expect(record.changeCount == 2)
        #expect(record.changedPartitions == [Self.room])
        let commit = record.commit
        #expect(commit.partitions.map(\.partition) == [Self.room])
        #expect(commit.partitions.first?.version == 4)
        #expect(commit.partitions.first?.changes == nil)
    }

    @Test("a screen keeps the inserted changes it wants for the commit's observers")
    func screened() throws {
        var record = Self.locked()
        let screen = ChangeScreen(generation: { 3 }, keeps: { _, change in change.key.id == "b" })
        for id in ["a", "b"] {
            record.insertedNew(try #require(try record.newObject(Self.object(id, 1), limits: Limits())), in: Self.room, keeping: screen)
        }
        #expect(record.screenedAt == 3)
        #expect(record.commit.partitions.first.map { $0.kept.map(\.key.id) } == ["b"])
    }

    @Test("the clock stamp: the changed partitions behind the transaction's clock; once stamped, none")
    func clockStamp() throws {
        var record = Self.locked()
        // Nothing changed: no clock, nothing to stamp (other's clock is the largest locked).
        #expect(record.clockStamp.partitions.isEmpty && record.clockStamp.clock == nil)
        record.insertedNew(try #require(try record.newObject(Self.object("a", 1), limits: Limits())), in: Self.room, keeping: nil)
        #expect(record.clockStamp.partitions.isEmpty && record.clockStamp.clock == 12)
        record.insertedNew(try #require(try record.newObject(Self.object("b", 1, in: Self.other), limits: Limits())), in: Self.other, keeping: nil)
        let (stamp, clock) = record.clockStamp
        #expect(stamp == [Self.room] && clock == 30)
        record.stamped(stamp, clock: clock)
        #expect(record.clockStamp.partitions.isEmpty && record.clockStamp.clock == 30)
    }
}
