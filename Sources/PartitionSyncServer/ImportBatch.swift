import Foundation
import Crypto
import Locking
import PartitionSync
import SyncImport
import SyncProtocol
import SyncStorage

/// The documents of one import transaction, taken from the ``PartitionWindow`` of the
/// documents read, with the blobs their binary fields became.
struct ImportBatch: Sendable {
    /// A class: entries pass through the window, the batch and the writer, and a copy of a
    /// struct of a dozen references retained each of them every time (a tenth of an import's
    /// CPU went to retaining and releasing).
    final class Entry: Sendable {
        let object: NewObject
        let collection: String
        /// Where the document was read, its `_id` the only field kept.
        let source: SourceDocument

        init(object: NewObject, collection: String, source: SourceDocument) {
            self.object = object
            self.collection = collection
            self.source = source
        }
    }

    /// A document read and mapped, waiting in the window with the blobs it holds.
    struct Pending: Sendable {
        var entry: Entry
        var blobs: [(digest: BlobDigest, bytes: [UInt8], contentType: String)]
    }

    var entries: [Entry] = []
    /// The bytes of each blob to publish before the batch is written.
    var blobs: [BlobDigest: (bytes: [UInt8], contentType: String)] = [:]

    init(_ documents: [Pending] = []) {
        entries.reserveCapacity(documents.count)
        for document in documents {
            entries.append(document.entry)
            for blob in document.blobs where blobs[blob.digest] == nil {
                blobs[blob.digest] = (blob.bytes, blob.contentType)
            }
        }
    }

    var isEmpty: Bool { entries.isEmpty }

    /// Documents of one collection and partition with one outcome, as the report counts them.
    struct Count: Sendable, Hashable {
        var outcome: ImportReport.Outcome
        var collection: String
        var partition: String
        var documents: Int
    }

    /// What became of the batch's documents, given the outcome of each, in order: a batch holds
    /// whole partitions one after the other, so each run of one partition's documents of one
    /// collection imported (or unchanged) is one count, not the report's three tables updated
    /// per document; each refusal is a count of its own, naming where its document was read.
    /// Pure.
    func counts(_ outcomes: [ObjectStore.ImportOutcome]) -> [Count] {
        precondition(outcomes.count == entries.count, "one outcome per document")
        var counts: [Count] = []
        var index = 0
        while index < entries.count {
            let entry = entries[index]
            let partition = entry.object.partition
            switch outcomes[index] {
            case .imported, .unchanged:
                let outcome = outcomes[index]
                var end = index + 1
                while end < entries.count, outcomes[end] == outcome, entries[end].object.partition == partition,
                    entries[end].collection == entry.collection
                {
                    end += 1
                }
                counts.append(Count(
                    outcome: outcome == .imported ? .imported : .unchanged, collection: entry.collection, partition: partition.description,
                    documents: end - index))
                index = end
            case .refused(let error):
                counts.append(Count(
                    outcome: .refused(Importer.refusal(error, entry.source, collection: entry.collection)), collection: entry.collection,
                    partition: partition.description, documents: 1))
                index += 1
            }
        }
        return counts
    }
}

/// Receives the binary fields the application's mapping stores as blobs while a document is
/// mapped (the mapping's closure is `@Sendable`): the bytes are taken under the lock and handed
/// over after the document.
final class BlobCollector: Sendable {
    struct Taken {
        var blobs: [(digest: BlobDigest, bytes: [UInt8], contentType: String)] = []
        var base64Fields = 0
    }

    private let taken = Locked(Taken())
    let maximumBytes: Int64

    init(maximumBytes: Int64) {
        self.maximumBytes = maximumBytes
    }

    /// The reference that replaces `field`'s bytes, keeping them to publish.
    func blob(_ field: BinaryField, contentType: String) throws -> JSONValue {
        let bytes = field.binary.bytes
        guard Int64(bytes.count) <= maximumBytes else {
            throw ImportError(
                .refusedByPolicy, "the binary is \(bytes.count) bytes, more than the largest blob (--blob-max-bytes \(maximumBytes))",
                path: field.path)
        }
        let digest = BlobDigest(sha256: SHA256.hash(data: bytes))
        taken.withLock { $0.blobs.append((digest, bytes, contentType)) }
        return BlobReference(digest: digest, length: Int64(bytes.count), contentType: contentType).json
    }

    func countBase64() {
        taken.withLock { $0.base64Fields += 1 }
    }

    /// What was taken since the last call.
    func take() -> Taken {
        taken.withLock { taken in
            defer { taken = Taken() }
            return taken
        }
    }

    /// The policy of the application's binary fields, its blobs taken here.
    func policy(for mapping: ImportMapping) -> ImportPolicy {
        var policy = BinaryPolicy(fallback: .blob { [self] field in
            countBase64()
            return .string(Data(field.binary.bytes).base64EncodedString())
        })
        for rule in mapping.binaryFields {
            let treatment: BinaryTreatment
            switch rule.treatment {
            case .base64:
                treatment = .blob { [self] field in
                    countBase64()
                    return .string(Data(field.binary.bytes).base64EncodedString())
                }
            case .blob(let contentType):
                treatment = .blob { [self] field in try blob(field, contentType: contentType) }
            }
            policy = policy.storing(FieldPattern(rule.path), in: rule.collection, as: treatment)
        }
        return ImportPolicy(binary: policy)
    }
}
