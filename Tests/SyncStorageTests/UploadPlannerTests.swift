import SyncProtocol
@testable import SyncStorage
import Testing

/// The upload planner on a record, without PostgreSQL: what becomes of each upload of a batch.
@Suite("Upload planner")
struct UploadPlannerTests {
    static let room = partition("room=a")
    static let other = partition("room=b")

    /// A record with the partitions locked at version 5 (room=b at 2) and `stored` read.
    static func record(_ stored: [ObjectKey: (Partition, [String: JSONValue]?)] = [:]) -> WriteRecord {
        var record = WriteRecord(author: "nobody", depth: 0)
        record.mode = .deferred
        record.versions = [room: 5, other: 2]
        for (key, (partition, body)) in stored {
            record.known[key] = (partition.description, body.map(DocumentState.live) ?? .deleted)
        }
        return record
    }

    static func upload(_ id: String?, _ operations: [SyncOperation], in partition: Partition = room, by principal: String = "p") -> Upload {
        Upload(partition: partition, operations: operations, principal: principal, requestId: id)
    }

    /// Runs the planner to the end; `check` answers each check (nil: accepted). Returns the
    /// steps and the indices of the uploads that were checked.
    static func plan(
        _ uploads: [Upload], on record: inout WriteRecord, answered: Set<RequestKey> = [],
        check: (Int, [ObjectChange], WriteRecord) -> SyncError? = { _, _, _ in nil }
    ) -> (steps: [UploadStep], checked: [Int]) {
        var planner = UploadPlanner(uploads: uploads, answered: answered, limits: Limits())
        var checked: [Int] = []
        while true {
            switch planner.next(&record) {
            case .done(let steps): return (steps, checked)
            case .check(let index, let changes):
                checked.append(index)
                planner.checked(check(index, changes, record), &record)
            }
        }
    }

    static func outcomes(_ record: WriteRecord) -> [String] {
        record.outcomes.map { "\($0.requestId): \($0.outcome["version"]?.description ?? $0.outcome["code"]?.stringValue ?? "?")" }
    }

    @Test("a request id repeated in one batch: the first is applied, the repeat is a repeat and stages nothing")
    func duplicateInBatch() {
        var record = Self.record()
        let (steps, checked) = Self.plan([
            Self.upload("r1", [.put(key("Doc", "a"), body: ["n": 1])]),
            Self.upload("r1", [.put(key("Doc", "b"), body: [:])]),
            // Another principal's r1 is another request.
            Self.upload("r1", [.put(key("Doc", "c"), body: [:])], by: "q"),
        ], on: &record)
        #expect(steps.map(\.isApplied) == [true, false, true])
        #expect(steps[1] == .repeated)
        #expect(checked == [0, 2])
        #expect(record.staged.map(\.change.key.id) == ["a", "c"])
        #expect(Self.outcomes(record) == ["r1: 5", "r1: 5"])
        #expect(record.outcomes.map(\.upload.principal) == ["p", "q"])
        #expect(record.known[key("Doc", "b")] == nil)
    }

    @Test("a request id answered before the batch is a repeat")
    func answeredBefore() {
        var record = Self.record()
        let (steps, _) = Self.plan(
            [Self.upload("old", [.put(key("Doc", "a"), body: [:])]), Self.upload("new", [.put(key("Doc", "b"), body: [:])])],
            on: &record, answered: [RequestKey(principal: "p", requestId: "old")])
        #expect(steps[0] == .repeated)
        #expect(steps[1].isApplied)
        #expect(Self.outcomes(record) == ["new: 5"])
    }

    @Test("a refusal between two accepted uploads leaves nothing of it: the third builds on the first")
    func refusalBetween() {
        var record = Self.record()
        let a = key("Doc", "a")
        let (steps, _) = Self.plan([
            Self.upload("r1", [.put(a, body: ["n": 1])]),
            // Refused by its last operation: its first must not stay either.
            Self.upload("r2", [.increment(a, path: path("n"), by: 100), .set(key("Doc", "missing"), path: path("x"), value: 1)]),
            // Refused by its check, after computing.
            Self.upload("r3", [.increment(a, path: path("n"), by: 1000), .put(key("Doc", "refused"), body: [:])]),
            Self.upload("r4", [.increment(a, path: path("n"), by: 1)]),
        ], on: &record) { _, changes, record in
            guard changes.contains(where: { $0.key.id == "refused" }) else { return nil }
            // The check sees the upload's own changes on top of the batch's: 1 + 1000.
            #expect(record.known[a]??.state.body?["n"] == 1001)
            return SyncError(.validationFailed, "no")
        }
        #expect(steps.map(\.isApplied) == [true, false, false, true])
        guard case .refused(let operationError) = steps[1], case .refused(let checkError) = steps[2],
            case .applied(let version, _, let changes) = steps[3]
        else { Issue.record("unexpected steps \(steps)"); return }
        #expect(operationError.code == .notFound)
        #expect(checkError.code == .validationFailed)
        #expect(version == 5)
        #expect(changes.map { $0.before.body?["n"] } == [1])
        #expect(record.known[a]??.state.body?["n"] == 2)
        #expect(record.known[key("Doc", "refused")] == nil)
        #expect(record.staged.map { $0.change.after.body?["n"] } == [1, 2])
        #expect(Self.outcomes(record) == ["r1: 5", "r2: not_found", "r3: validation_failed", "r4: 5"])
    }

    @Test("an upload that expects another state than the stored one: an edit of a deleted object changes nothing (delete wins), of one never stored, of a field of another type, or a put of a key of another partition is refused")
    func stateMismatch() {
        let stored = key("Doc", "stored")
        let elsewhere = key("Doc", "elsewhere")
        let tombstone = key("Doc", "tombstone")
        var record = Self.record([
            stored: (Self.room, ["n": 1, "text": "hi"]), elsewhere: (Self.other, ["n": 1]), tombstone: (Self.room, nil),
        ])
        let (steps, _) = Self.plan([
            Self.upload("c", [.increment(stored, path: path("text"), by: 1)]),
            Self.upload("d", [.delete(stored)]),
            Self.upload("e", [.increment(stored, path: path("n"), by: 1)]),
            Self.upload("f", [.set(tombstone, path: path("n"), value: 1)]),
            Self.upload("ghost", [.set(key("Doc", "ghost"), path: path("n"), value: 1)]),
            Self.upload("g", [.put(elsewhere, body: [:])]),
            // An edit of another partition's object: as if there were none.
            Self.upload("h", [.set(elsewhere, path: path("n"), value: 2)]),
            Self.upload("i", [.put(elsewhere, body: ["n": 3])], in: Self.other),
        ], on: &record)
        let codes = steps.map { step -> String in
            switch step {
            case .applied(let version, _, let changes): "v\(version) \(changes.count)"
            case .refused(let error): error.code.rawValue
            case .repeated: "repeated"
            }
        }
        #expect(codes == ["type_mismatch", "v5 1", "v5 0", "v5 0", "not_found", "partition_mismatch", "not_found", "v2 1"])
        #expect(record.known[stored]??.state == .deleted)
        #expect(record.known[elsewhere]??.state.body?["n"] == 3)
    }

    @Test("an invalid request id is refused and stores no outcome; an upload without one stores none either")
    func requestIDs() {
        var record = Self.record()
        let (steps, checked) = Self.plan([
            Self.upload("", [.put(key("Doc", "a"), body: [:])]),
            Self.upload(nil, [.put(key("Doc", "b"), body: [:])]),
        ], on: &record)
        guard case .refused(let error) = steps[0] else { Issue.record("accepted"); return }
        #expect(error.code == .badRequest)
        #expect(steps[1].isApplied)
        #expect(checked == [1])
        #expect(record.outcomes.isEmpty)
    }
}
