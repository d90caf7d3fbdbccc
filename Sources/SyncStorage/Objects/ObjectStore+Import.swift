import Locking
import PostgresNIO
import SyncProtocol

extension ObjectStore {
    /// What became of one object of an import batch.
    package enum ImportOutcome: Sendable, Hashable {
        /// Written: absent before.
        case imported
        /// Stored already with this very body (an export imported again, or resumed): nothing written.
        case unchanged
        /// Refused: by the engine's limits, the validator, or because the key is taken (with
        /// another body, deleted since, or in another partition).
        case refused(SyncError)
    }

    /// How many ``importObjects(_:validate:commit:provisionalBlobs:)`` batches were inserted as
    /// new objects without reading their keys, and how many were written (again) reading every key.
    package var importBatchPaths: (new: Int, again: Int) { importPaths.withLock { $0 } }

    /// Validates the changes of one upload of an import, in its partition (given, so a batch's
    /// caller keeps no table of each key's partition); throwing refuses the upload.
    package typealias ImportValidator = @Sendable (_ changes: [ObjectChange], _ partition: Partition, _ transaction: WriteTransaction) async throws -> Void

    /// The code of the refusal of an object whose id is stored already with another body, or
    /// was deleted: the stored state is kept.
    package static let importConflict = SyncError.Code("exists")

    /// Writes the objects of an import in one transaction: each upload holds one `put` of a
    /// new object and is all-or-nothing on its own (validated by `validate` on top of the ones
    /// before it). An object whose key is stored already is never changed: the same body is
    /// ``ImportOutcome/unchanged``, anything else a refusal (``importConflict``, or
    /// `partition_mismatch` for a key of another partition). So an import run again, or
    /// resumed after an interruption, writes each object once. With `commit` false the
    /// transaction is rolled back: the outcomes are what a commit would have written, the
    /// `provisionalBlobs` (a dry run's, whose bytes are not stored) counting as stored.
    package func importObjects(
        _ uploads: [Upload], validate: ImportValidator?, commit: Bool, provisionalBlobs: [BlobReference] = []
    ) async throws -> [ImportOutcome] {
        guard !uploads.isEmpty else { return [] }
        let guarded: ImportValidator = { changes, partition, transaction in
            for change in changes {
                switch change.before {
                case .absent: break
                case .live:
                    throw SyncError(Self.importConflict, "\(change.key) is stored already with another body; the stored one is kept")
                case .deleted:
                    throw SyncError(Self.importConflict, "\(change.key) was deleted since it was stored; it stays deleted")
                }
            }
            try await validate?(changes, partition, transaction)
        }
        let validators: [WriteTransaction.Check?] = uploads.map { upload in
            let partition = upload.partition
            return { changes, transaction in try await guarded(changes, partition, transaction) }
        }
        // Neither sorted nor made unique here: the lock sorts the partitions it takes, and the
        // read the keys it has not read (sorting a batch's keys and partitions once more took
        // 8 % of an import's CPU).
        let partitions = Array(Set(uploads.map(\.partition)))
        let keys = uploads.flatMap { $0.operations.map(\.key) }
        if commit, eventInterest.recordsNothing {
            // Most batches of an import hold only new objects: taken as new, their keys are not
            // read, and their rows are inserted without a conflict clause (psync_insert_new, a
            // quarter of the import's database time less). A key stored already fails that
            // insert, and the batch is written again the careful way below, which reads every
            // key (an export imported again, or resumed). Not with events to record (the
            // insert records none) nor for a dry run (which must say what is stored).
            do {
                let outcomes = try await withWriteTransaction(author: uploads[0].principal) { transaction in
                    transaction.defersWrites = true
                    try await transaction.lockAndLoad(partitions, [], lockTimeout: configuration.lockPatience)
                    transaction.assumeNew(keys)
                    return Self.outcomes(try await transaction.stage(uploads, validators: validators))
                }
                importPaths.withLock { $0.new += 1 }
                return outcomes
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
                logger.debug("an import batch holds a key stored already: written again, reading every key")
            }
        }
        importPaths.withLock { $0.again += 1 }
        do {
            return try await withWriteTransaction(author: uploads[0].principal) { transaction in
                transaction.defersWrites = true
                if !commit, !provisionalBlobs.isEmpty {
                    try await transaction.connection.query(
                        """
                        INSERT INTO psync_blobs (digest, location, length, content_type, uploader)
                        SELECT * FROM unnest(\(provisionalBlobs.map(\.digest.rawValue))::text[], \(provisionalBlobs.map { _ in "" })::text[],
                                             \(provisionalBlobs.map(\.length))::bigint[], \(provisionalBlobs.map(\.contentType))::text[],
                                             \(provisionalBlobs.map { _ in "system:import" })::text[])
                        ON CONFLICT (digest) DO NOTHING
                        """, logger: logger)
                    try await transaction.connection.query(
                        """
                        INSERT INTO psync_blob_holders (digest, principal)
                        SELECT unnest(\(provisionalBlobs.map(\.digest.rawValue))::text[]), \(uploads[0].principal)
                        ON CONFLICT DO NOTHING
                        """, logger: logger)
                }
                try await transaction.lockAndLoad(partitions, keys, lockTimeout: configuration.lockPatience)
                let outcomes = Self.outcomes(try await transaction.stage(uploads, validators: validators))
                guard commit else { throw ImportRolledBack(outcomes: outcomes) }
                return outcomes
            }
        } catch let rolledBack as ImportRolledBack {
            return rolledBack.outcomes
        }
    }

    /// What became of each upload of an import batch, from its step.
    private static func outcomes(_ steps: [UploadStep]) -> [ImportOutcome] {
        steps.map { step in
            switch step {
            case .applied(_, _, let changes): changes.isEmpty ? .unchanged : .imported
            case .refused(let error): .refused(error)
            // Only an upload with a request id repeats; an import's have none.
            case .repeated: .unchanged
            }
        }
    }
}

/// Thrown to roll back a dry run's transaction, with what it would have written.
private struct ImportRolledBack: Error {
    var outcomes: [ObjectStore.ImportOutcome]
}
