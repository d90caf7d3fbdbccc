import PostgresNIO
import SyncProtocol

extension WriteTransaction {
    /// Checks that every blob the changes newly reference is stored, with the length the
    /// reference gives, and that the writer may cite it; `blob_missing` (with the digests)
    /// otherwise, the same answer whether the blob is stored or not (docs/PROTOCOL.md,
    /// "Blobs"). A digest is not a key to the bytes: a client may cite a blob only if it has
    /// shown it holds them (uploaded or downloaded them whole: `psync_blob_holders`) or a live
    /// object of `partition` references it already. The server's own writes (triggers, and
    /// `system:` principals) may cite any stored blob. The blobs' rows are
    /// locked (`FOR KEY SHARE`) until the transaction ends, so the collector, which locks a
    /// blob before it deletes it, cannot remove one this transaction is about to reference
    /// (``BlobStore/collect(unreferencedFor:releasedFor:limit:)``). Only the changes of
    /// `operations` that may add a reference are looked at (``SyncOperation/mayAddBlobReference``).
    func checkBlobReferences(_ changes: [ObjectChange], of operations: [SyncOperation], in partition: Partition) async throws {
        let suspects = Set(operations.lazy.filter(\.mayAddBlobReference).map(\.key))
        guard !suspects.isEmpty else { return }
        try await checkBlobReferences(changes.filter { suspects.contains($0.key) }, in: partition)
    }

    /// ``checkBlobReferences(_:of:in:)`` of every one of `changes`.
    func checkBlobReferences(_ changes: [ObjectChange], in partition: Partition) async throws {
        var wanted: [BlobDigest: Int64] = [:]
        for change in changes {
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
        let trusted = depth > 0 || author.hasPrefix("system:")
        let rows = try await connection.query(
            """
            SELECT b.digest, b.length,
                   \(trusted) OR EXISTS (SELECT 1 FROM psync_blob_holders h WHERE h.digest = b.digest AND h.principal = \(author))
                   OR EXISTS (SELECT 1 FROM psync_blob_refs r
                              WHERE r.digest = b.digest AND r.partition = \(partition.description) AND r.released_at IS NULL)
            FROM psync_blobs b
            WHERE b.digest = ANY(\(digests.map(\.rawValue))::text[])
            ORDER BY b.digest
            FOR KEY SHARE OF b
            """, logger: logger)
        var citable: [String: Int64] = [:]
        for try await (digest, length, mayCite) in rows.decode((String, Int64, Bool).self) where mayCite {
            citable[digest] = length
        }
        let missing = digests.filter { citable[$0.rawValue] != wanted[$0] }
        guard missing.isEmpty else {
            throw SyncError(
                .blobMissing,
                "upload these blobs first (PUT /v1/blobs/{digest}), or give their stored length: "
                    + missing.map(\.rawValue).joined(separator: ", "),
                details: ["digests": .array(missing.map { .string($0.rawValue) })])
        }
    }
}
