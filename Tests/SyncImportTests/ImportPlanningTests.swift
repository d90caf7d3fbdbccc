import SyncImport
import SyncProtocol
import Testing

/// The pure parts of `psync import` around the readers: where a document goes, what a users
/// export holds, the report's counts and bounds, and the progress lines.
@Suite("Import planning")
struct ImportPlanningTests {
    static let oid = ObjectID(hex: "5f1b2c3d4e5f60718293a4b5")!

    @Test("_partition is the default partition field, removed from the body; _id becomes the object id")
    func defaultPartitionField() throws {
        let placement = DocumentPlacement()
        let document: BSONDocument = ["_id": .objectID(Self.oid), "_partition": "user=ann", "name": "Ann"]
        let (id, partition, field) = try placement.place(document)
        #expect(id == "5f1b2c3d4e5f60718293a4b5")
        #expect(partition.description == "user=ann")
        #expect(field == "_partition")
        let body = placement.body(["_id": "5f1b2c3d4e5f60718293a4b5", "_partition": "user=ann", "name": "Ann"], partitionField: field)
        #expect(body == ["name": "Ann"])
        let kept = DocumentPlacement(keepsPartitionField: true).body(["_partition": "user=ann", "name": "Ann"], partitionField: field)
        #expect(kept == ["_partition": "user=ann", "name": "Ann"])
    }

    @Test("partition is detected when _partition is absent and no field was named, as RChat has it")
    func detectedPartitionField() throws {
        let (_, partition, field) = try DocumentPlacement().place(["_id": "m-1", "partition": "conversation=c-1"])
        #expect(partition.description == "conversation=c-1")
        #expect(field == "partition")
        // Named explicitly, the other field is not looked at.
        #expect(throws: ImportError.self) { try DocumentPlacement(partitionField: "_partition").place(["_id": "m-1", "partition": "conversation=c-1"]) }
    }

    @Test("--partition-key gives values without a key one")
    func partitionKey() throws {
        let placement = DocumentPlacement(partitionKey: "user")
        #expect(try placement.place(["_id": "x", "_partition": "5f1b"]).partition.description == "user=5f1b")
        #expect(try placement.place(["_id": "x", "_partition": "team=a"]).partition.description == "team=a")
        let error = try #require(throws: ImportError.self) { try DocumentPlacement().place(["_id": "x", "_partition": "5f1b"]) }
        #expect(error.kind == .invalidPartition)
        #expect(error.message.contains("--partition-key"))
    }

    @Test("refusals name the field: no partition, a partition that is not a string, an _id that cannot be an id",
          arguments: [
            (["_id": "x"] as BSONDocument, ImportError.Kind.invalidPartition, "_partition"),
            (["_id": "x", "_partition": .int32(3)] as BSONDocument, .invalidPartition, "_partition"),
            (["_partition": "user=a"] as BSONDocument, .invalidID, "_id"),
            (["_id": .double(1.5), "_partition": "user=a"] as BSONDocument, .invalidID, "_id"),
            (["_id": "", "_partition": "user=a"] as BSONDocument, .invalidID, "_id"),
          ])
    func refusals(document: BSONDocument, kind: ImportError.Kind, field: String) throws {
        let error = try #require(throws: ImportError.self) { try DocumentPlacement().place(document) }
        #expect(error.kind == kind)
        #expect(error.path?.description == field)
    }

    @Test("ids: ObjectId as hex, UUID canonical, Int32 and Int64 as decimal text")
    func ids() throws {
        #expect(try DocumentPlacement.objectID(.int32(-7)) == "-7")
        #expect(try DocumentPlacement.objectID(.int64(9_007_199_254_740_993)) == "9007199254740993")
        let uuid = BSONBinary(subtype: BSONBinary.uuid, bytes: Array(0..<16))
        #expect(try DocumentPlacement.objectID(.binary(uuid)) == "00010203-0405-0607-0809-0a0b0c0d0e0f")
    }

    @Test("an App Services user: its id and data.email; one without an email is refused")
    func appServicesUser() throws {
        let user = try AppServicesUser(document: ["_id": "5f1b", "data": ["email": "ann@example.com"], "disabled": true])
        #expect(user == AppServicesUser(id: "5f1b", email: "ann@example.com", disabled: true))
        let error = try #require(throws: ImportError.self) { try AppServicesUser(document: ["_id": "5f1c", "type": "normal"]) }
        #expect(error.kind == .invalidUser)
        #expect(error.documentID == "5f1c")
    }

    @Test("conversions count the types JSON does not have, nested ones included")
    func conversions() {
        var tally = ConversionTally()
        tally.count(["_id": .objectID(Self.oid), "n": .int32(1), "big": .int64(2), "at": .dateTime(0),
                     "list": [.int64(3), ["d": .decimal128(Decimal128(low: 1, high: 0x3040_0000_0000_0000))]], "x": .double(.nan)])
        #expect(tally.counts == ["ObjectId": 1, "Int64": 2, "Date": 1, "Decimal128": 1, "Double": 1])
    }

    @Test("the report counts per collection and partition, lists refusals, and stays bounded")
    func reportBounds() {
        var report = ImportReport(partitionLimit: 2, refusalLimit: 1)
        report.record(.imported, collection: "A", partition: "p=1")
        report.record(.unchanged, collection: "A", partition: "p=2")
        report.record(.imported, collection: "B", partition: "p=3")
        let refusal = ImportReport.Refusal(code: "validation_failed", message: "no", file: "B.json", documentNumber: 4, documentID: "\"b\"", field: "text")
        report.record(.refused(refusal), collection: "B", partition: "p=1")
        report.record(.refused(refusal), collection: "B", partition: nil)
        #expect(report.total.read == 5 && report.total.imported == 2 && report.total.unchanged == 1 && report.total.refused == 2)
        #expect(report.collections["B"]?.refused == 2)
        #expect(report.partitions.keys.sorted() == ["p=1", "p=2"])
        #expect(report.otherPartitions.imported == 1)
        #expect(report.refusals == [refusal])
        #expect(report.refusalsNotListed == 1)
        // Documents counted together count as each counted alone.
        var together = ImportReport(partitionLimit: 1)
        var alone = ImportReport(partitionLimit: 1)
        together.record(.imported, collection: "A", partition: "p=1", count: 3)
        together.record(.unchanged, collection: "A", partition: "p=2", count: 2)
        for _ in 0..<3 { alone.record(.imported, collection: "A", partition: "p=1") }
        for _ in 0..<2 { alone.record(.unchanged, collection: "A", partition: "p=2") }
        #expect(together == alone)
        #expect(refusal.description == "refused [validation_failed] B.json: document 4 (_id \"b\"): field text: no")
        #expect(report.json["refusals"]?.arrayValue?.first?["field"] == "text")
    }

    @Test("progress: a line at most every interval, a bar with percent and rate on a terminal")
    func progress() {
        var lines = ProgressMeter(style: .lines, interval: .seconds(5), totalBytes: 1000)
        #expect(lines.update(documents: 10, bytes: 100, elapsed: .seconds(1)) == "progress: 10 documents (10%), 10/s")
        #expect(lines.update(documents: 20, bytes: 200, elapsed: .seconds(3)) == nil)
        #expect(lines.update(documents: 60, bytes: 600, elapsed: .seconds(6)) == "progress: 60 documents (60%), 10/s")
        #expect(lines.update(documents: 61, bytes: 610, elapsed: .seconds(7), force: true) != nil)
        var bar = ProgressMeter(style: .bar(width: 10), interval: .zero, totalBytes: 1000)
        #expect(bar.update(documents: 500, bytes: 500, elapsed: .seconds(2)) == "\r[#####.....] 50% 500 documents, 250/s")
        var unknown = ProgressMeter(style: .bar(width: 10), interval: .zero)
        #expect(unknown.update(documents: 5, bytes: 5, elapsed: .zero) == "\r5 documents, 0/s")
    }
}
