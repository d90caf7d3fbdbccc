import PartitionSync
import SyncProtocol
@testable import SyncStorage
import Testing

/// The record of a write transaction as a value, without PostgreSQL.
@Suite("Write record")
struct WriteRecordTests {
    static let room = partition("room=a")

    /// Every stored property of the record, by name, as text.
    static func fields(_ record: WriteRecord) -> [String: String] {
        Dictionary(uniqueKeysWithValues: Mirror(reflecting: record).children.map { ($0.label ?? "?", String(reflecting: $0.value)) })
    }

    static func change(_ id: String, _ n: Int64) -> ObjectChange {
        ObjectChange(key: key("Doc", id), before: .absent, after: .live(["n": .int(n)]), encodedBody: nil)
    }

    /// A record with something in every field.
    static func started() -> WriteRecord {
        var record = WriteRecord(author: "alice", depth: 0)
        record.versions[room] = 3
        record.clocks[room] = 7
        record.timeline = 1
        record.wrote([Write(partition: room, version: 3, change: change("a", 1), depth: 0, author: "alice")], labelled: nil)
        record.stage([change("b", 1)], in: room)
        record.searches[WriteTransaction.Search(search: .field("Doc", path: "n", in: ["1"]))] =
            WriteTransaction.SearchAnswer(found: [:], applied: 1)
        record.outcomes.append((Upload(partition: room, operations: [], principal: "alice", requestId: "r1"), "r1", ["version": 3]))
        record.recordedEvents = 1
        return record
    }

    /// Changes every field of the record, as the body of a savepoint could.
    static func changeEverything(_ record: inout WriteRecord) {
        record.author = "bob"
        record.depth = 2
        record.mode = .deferredEncoding
        record.versions[partition("room=b")] = 1
        record.clocks[partition("room=b")] = 9
        record.timeline = 2
        record.wrote([Write(partition: room, version: 3, change: change("c", 2), depth: 2, author: "bob")], labelled: nil)
        record.stage([change("d", 2)], in: room)
        record.searches[WriteTransaction.Search(search: .field("Doc", path: "n", in: ["2"]))] =
            WriteTransaction.SearchAnswer(found: [:], applied: 3)
        record.outcomes.append((Upload(partition: room, operations: [], principal: "bob", requestId: "r2"), "r2", ["version": 3]))
        record.recordedEvents = 2
        record.recordedEarly = 3
        record.bytesRead += 100
        record.forgetReads(in: [room.description])
        // A chunked apply lets go of a written object: what it released, kept and screened.
        record.release([key("Doc", "a")], screening: .all, keeping: ChangeScreen(generation: { 5 }, keeps: { _, _ in true }))
        // A raise of counters applied to the whole body, being staged.
        record.silenced.insert(key("Doc", "e"))
    }

    @Test("a savepoint rolled back restores every field of the record (a field the rollback forgot fails this)")
    func savepointRestoresEverything() {
        var record = Self.started()
        let before = Self.fields(record)
        let savepoint = record.savepoint()
        Self.changeEverything(&record)
        let changed = Self.fields(record)
        // Every field changed, so any field the rollback left as the savepoint's body made it shows.
        for (name, value) in before.sorted(by: { $0.key < $1.key }) {
            #expect(changed[name] != value, "the test does not change \(name): change it in changeEverything")
        }
        record.rollBack(to: savepoint)
        let restored = Self.fields(record)
        for (name, value) in before.sorted(by: { $0.key < $1.key }) {
            #expect(restored[name] == value, "\(name) is not restored")
        }
        #expect(restored.count == before.count)
    }

    @Test("staging reads back: a staged change is known, touched and counted, and carries the author and depth of its time")
    func staging() {
        var record = WriteRecord(author: "alice", depth: 1)
        record.versions[Self.room] = 5
        record.stage([Self.change("a", 1)], in: Self.room)
        record.author = "bob"
        record.stage([Self.change("a", 2)], in: Self.room)
        #expect(record.changeCount == 2)
        #expect(record.known[key("Doc", "a")]??.state == .live(["n": 2]))
        #expect(record.touched[key("Doc", "a")]?.version == 5)
        #expect(record.staged.map(\.author) == ["alice", "bob"])
        #expect(record.touchLog == [key("Doc", "a"), key("Doc", "a")])
    }

    @Test("a change of a silenced object (a raise of counters written into its body) makes no event when written; the others do")
    func silenced() {
        var record = WriteRecord(author: "trigger:t", depth: 1)
        record.versions[Self.room] = 5
        record.silenced = [key("Doc", "a")]
        record.stage([Self.change("a", 1), Self.change("b", 1)], in: Self.room)
        record.silenced = []
        record.stage([Self.change("c", 1)], in: Self.room)
        #expect(record.staged.map(\.silent) == [true, false, false])
        record.wrote(record.staged, labelled: nil)
        #expect(record.events.compactMap(\.key?.id) == ["b", "c"])
        #expect(record.changes.count == 3)
    }

    @Test("staged changes written are taken in as changes once, known and touched as their staging left them")
    func stagedWritten() {
        var record = WriteRecord(author: "alice", depth: 0)
        record.versions[Self.room] = 5
        record.stage([Self.change("a", 1), Self.change("b", 2)], in: Self.room)
        var again = record
        record.wrote(record.staged, labelled: nil, staged: true)
        again.wrote(again.staged, labelled: nil)
        #expect(record.changes.map(\.change) == again.changes.map(\.change))
        #expect(record.events.count == again.events.count)
        #expect(record.known.mapValues { String(reflecting: $0) } == again.known.mapValues { String(reflecting: $0) })
        #expect(record.touched.mapValues { String(reflecting: $0) } == again.touched.mapValues { String(reflecting: $0) })
        // Each key once in the touch log: its state did not change between staging and writing.
        #expect(record.touchLog == [key("Doc", "a"), key("Doc", "b")])
    }

    @Test("the modes: only a deferring transaction defers encoding")
    func modes() {
        #expect(!WriteMode.immediate.defersWrites)
        #expect(WriteMode.deferred.defersWrites)
        #expect(WriteMode.deferredEncoding.defersWrites)
    }
}
