import Crypto
import Foundation
import Locking
import PartitionSync
import PartitionSyncServer
import PostgresNIO
import RChat
import SyncImport
import SyncProtocol
import SyncStorage
import SyncTesting

/// Runs imports in the test process and keeps what they printed.
enum ImportHarness {
    /// The RChat export committed by SyncImportTests (scripts/generate_rchat_export.py, seed
    /// 20261125: 3 users, 2 conversations, 6 messages, in every format).
    static let rchat = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("SyncImportTests/Fixtures/rchat").path
    static let formats = ["mongoexport-relaxed", "mongoexport-canonical", "mongoexport-canonical-array", "mongodump"]
    static let collections = ["User", "Chatster", "ChatMessage"]

    /// What an import printed.
    final class Printed: Sendable {
        let refusals = Locked<[ImportReport.Refusal]>([])
        let tokens = Locked<[String: String]>([:])
        let progress = Locked<[String]>([])

        var output: Importer.Output {
            Importer.Output(
                progress: { line in self.progress.withLock { $0.append(line) } },
                refusal: { refusal in self.refusals.withLock { $0.append(refusal) } },
                token: { userID, _, token in self.tokens.withLock { $0[userID] = token } })
        }
    }

    static func run(
        _ db: TestDatabase, _ options: ImportOptions, application: SyncApplication = RChat.application, printed: Printed = Printed()
    ) async throws -> ImportReport {
        try await Importer(store: db.store(), application: application, options: options, output: printed.output).run()
    }

    /// Every document of an export file, as the readers give them.
    static func documents(_ path: String) throws -> [SourceDocument] {
        var reader = try ExportReader(ExportFile(path: path)!)
        var documents: [SourceDocument] = []
        while let document = try reader.next() { documents.append(document) }
        return documents
    }

    /// The body an RChat document must be stored with: the core's mapping, pictures as blob
    /// references by their SHA-256 (computed here), thumbnails as base64.
    static let expectedMapper = JSONMapper(policy: ImportPolicy(binary: BinaryPolicy()
        .storing("userPreferences.avatarImage.picture", as: .blob(reference))
        .storing("avatarImage.picture", as: .blob(reference))
        .storing("image.picture", as: .blob(reference))))

    @Sendable static func reference(_ field: BinaryField) -> JSONValue {
        let bytes = field.binary.bytes
        return BlobReference(digest: BlobDigest(sha256: SHA256.hash(data: bytes)), length: Int64(bytes.count), contentType: "image/jpeg").json
    }

    /// The source file of `collection` in `format`.
    static func file(_ format: String, _ collection: String) -> String {
        format == "mongodump" ? "\(rchat)/mongodump/rchat/\(collection).bson" : "\(rchat)/\(format)/\(collection).json"
    }

    static func folder(_ format: String) -> String { "\(rchat)/\(format)" }
}
