@testable import PartitionSyncServer
import SyncImport
import SyncProtocol
import SyncStorage
import Testing

/// How a written batch's outcomes are counted for the report, without PostgreSQL.
@Suite("Import batch counts")
struct ImportBatchTests {
    /// A batch of documents numbered from 1, each `(partition, collection)`.
    static func batch(_ documents: [(String, String)]) -> ImportBatch {
        var batch = ImportBatch()
        for (number, (partition, collection)) in documents.enumerated() {
            let id = "d\(number + 1)"
            batch.entries.append(ImportBatch.Entry(
                object: NewObject(key: try! ObjectKey(collection: collection, id: id), partition: try! Partition(partition), body: [:]),
                collection: collection,
                source: SourceDocument(
                    document: ["_id": .string(id)], file: "\(collection).json", number: number + 1, byteOffset: 0, line: number + 1)))
        }
        return batch
    }

    @Test("runs of one partition and collection with one outcome are counted at once; a refusal alone, naming its document")
    func runs() throws {
        let batch = Self.batch([
            ("room=a", "Msg"), ("room=a", "Msg"), ("room=a", "Msg"), ("room=a", "Note"), ("room=b", "Msg"), ("room=b", "Msg"), ("room=a", "Msg"),
        ])
        let counts = batch.counts([.imported, .imported, .unchanged, .imported, .imported, .refused(SyncError(.validationFailed, "no")), .imported])
        #expect(counts.map(\.documents) == [2, 1, 1, 1, 1, 1])
        #expect(counts.map(\.partition) == ["room=a", "room=a", "room=a", "room=b", "room=b", "room=a"])
        #expect(counts.map(\.collection) == ["Msg", "Msg", "Note", "Msg", "Msg", "Msg"])
        #expect(counts[0].outcome == .imported && counts[1].outcome == .unchanged && counts[3].outcome == .imported)
        guard case .refused(let refusal) = counts[4].outcome else {
            Issue.record("the sixth document was not counted as refused: \(counts[4])")
            return
        }
        #expect(refusal.code == "validation_failed" && refusal.message == "no")
        #expect(refusal.file == "Msg.json" && refusal.documentNumber == 6 && refusal.line == 6 && refusal.documentID == "\"d6\"")
        #expect(refusal.collection == "Msg")
    }

    @Test("a batch whose documents are all imported in one partition is one count")
    func oneRun() {
        let counts = Self.batch(Array(repeating: ("room=a", "Msg"), count: 500)).counts(Array(repeating: .imported, count: 500))
        #expect(counts == [ImportBatch.Count(outcome: .imported, collection: "Msg", partition: "room=a", documents: 500)])
    }
}
