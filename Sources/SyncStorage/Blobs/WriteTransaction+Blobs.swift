import PostgresNIO
import SyncProtocol

extension WriteTransaction {
    /// Checks that every blob the changes newly reference is stored, with the length the
    /// reference gives; `blob_missing` (with the digests) otherwise. The blobs' rows are
    /// locked (`FOR KEY SHARE`) until the transaction ends, so the collector, which locks a
    /// blob before it deletes it, cannot remove one this transaction is about to reference
    /// (``BlobStore/collect(unreferencedFor:releasedFor:limit:)``). Only the changes of
    /// `operations` that may add a reference are looked at (``SyncOperation/mayAddBlobReference``).
    func checkBlobReferences(_ changes: [ObjectChange], of operations: [SyncOperation]) async throws {
        let suspects = Set(operations.lazy.filter(\.mayAddBlobReference).map(\.key))
        guard !suspects.isEmpty else { return }
        var wanted: [BlobDigest: Int64] = [:]
        for change in changes where suspects.contains(change.key) {
            guard let after = change.after.body else { continue }
            let before = Set(try change.before.body.map { try BlobReference.references(in: .object($0)) } ?? [])
            for reference in try BlobReference.references(in: .object(after)) where !before.contains(reference) {
                if let length = wanted[reference.digest], length != reference.length {
                    throw SyncError(
                        .invalidBlobReference, "\(change.key) references \(reference.digest) with two lengths")
                }
                wanted[reference.digest] = reference.length
            }
        }
        guard !wanted.isEmpty else { return }
        let digests = wanted.keys.sorted()
        let rows = try await connection.query(
            """
            SELECT digest, length FROM psync_blobs
            WHERE digest = ANY(\(digests.map(\.rawValue))::text[])
            ORDER BY digest
            FOR KEY SHARE
            """, logger: logger)
        var stored: [String: Int64] = [:]
        for try await (digest, length) in rows.decode((String, Int64).self) { stored[digest] = length }
        let missing = digests.filter { stored[$0.rawValue] != wanted[$0] }
        guard missing.isEmpty else {
            throw SyncError(
                .blobMissing,
                "upload these blobs first (PUT /v1/blobs/{digest}), or give their stored length: "
                    + missing.map(\.rawValue).joined(separator: ", "),
                details: ["digests": .array(missing.map { .string($0.rawValue) })])
        }
    }
}
