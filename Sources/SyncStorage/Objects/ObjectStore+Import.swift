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

    /// How many ``importObjects(_:author:validate:commit:provisionalBlobs:)`` batches were
    /// inserted by the bulk path, and how many were written (again) reading every key.
    package var importBatchPaths: (new: Int, again: Int) { importPaths.withLock { $0 } }

    /// Validates the changes of one upload of an import, in its partition (given, so a batch's
    /// caller keeps no table of each key's partition); throwing refuses the upload.
    package typealias ImportValidator = @Sendable (_ changes: [ObjectChange], _ partition: Partition, _ transaction: WriteTransaction) async throws -> Void

    /// The code of the refusal of an object whose id is stored already with another body, or
    /// was deleted: the stored state is kept.
    package static let importConflict = SyncError.Code("exists")

    /// The refusal of an import's `change` of an object stored already (``importConflict``),
    /// `nil` for an object absent before.
    static func importConflict(_ change: ObjectChange) -> SyncError? {
        switch change.before {
        case .absent: nil
        case .live: SyncError(Self.importConflict, "\(change.key) is stored already with another body; the stored one is kept")
        case .deleted: SyncError(Self.importConflict, "\(change.key) was deleted since it was stored; it stays deleted")
        }
    }

    /// Writes the objects of an import, written by `author`, in one transaction: each object
    /// is all-or-nothing on its own (validated by `validate` on top of the ones before it). An
    /// object whose key is stored already is never changed: the same body is
    /// ``ImportOutcome/unchanged``, anything else a refusal (``importConflict``, or
    /// `partition_mismatch` for a key of another partition). So an import run again, or
    /// resumed after an interruption, writes each object once. With `commit` false the
    /// transaction is rolled back: the outcomes are what a commit would have written, the
    /// `provisionalBlobs` (a dry run's, whose bytes are not stored) counting as stored.
    ///
    /// Most batches of an import hold only new objects: they take the bulk path, which reads
    /// no key, makes no ``Upload`` or plan per object, and inserts the rows without a conflict
    /// clause (`psync_insert_new`). A key stored already fails that insert, nothing of it stays,
    /// and the batch is written again the careful way, which reads every key through the
    /// upload planner (an export imported again, or resumed). Not with events to record (the
    /// insert records none) nor for a dry run (which must say what is stored).
    package func importObjects(
        _ objects: [NewObject], author: String, validate: ImportValidator?, commit: Bool, provisionalBlobs: [BlobReference] = []
    ) async throws -> [ImportOutcome] {
        guard !objects.isEmpty else { return [] }
        // Neither sorted nor made unique here: the lock sorts the partitions it takes (sorting
        // a batch's keys and partitions once more took 8 % of an import's CPU).
        let partitions = Array(Set(objects.map(\.partition)))
        if commit, eventInterest.recordsNothing {
            do {
                let outcomes = try await withWriteTransaction(author: author) { transaction in
                    try await transaction.lockAndLoad(partitions, [], lockTimeout: configuration.lockPatience)
                    return try await insertNew(objects, validate: validate, in: transaction)
                }
                importPaths.withLock { $0.new += 1 }
                return outcomes
            } catch let error as PSQLError where error.serverInfo?[.sqlState] == "23505" {
                logger.debug("an import batch holds a key stored already: written again, reading every key")
            }
        }
        importPaths.withLock { $0.again += 1 }
        return try await importCarefully(objects, partitions: partitions, author: author, validate: validate, commit: commit, provisionalBlobs: provisionalBlobs)
    }

    /// The bulk path of ``importObjects(_:author:validate:commit:provisionalBlobs:)``: each
    /// object created (``WriteRecord/newObject(_:limits:)``), its blob references checked
    /// when its body may hold one, validated with the batch's objects before it in view, and
    /// the accepted ones inserted by one statement (``WriteTransaction/insertNew(_:)``).
    private func insertNew(_ objects: [NewObject], validate: ImportValidator?, in transaction: WriteTransaction) async throws -> [ImportOutcome] {
        var outcomes: [ImportOutcome] = []
        outcomes.reserveCapacity(objects.count)
        var rows: [WriteTransaction.NewRow] = []
        rows.reserveCapacity(objects.count)
        transaction.record.known.reserveCapacity(transaction.record.known.count + objects.count)
        for object in objects {
            let change: ObjectChange
            do throws(SyncError) {
                guard let created = try transaction.record.newObject(object, limits: limits) else {
                    outcomes.append(.unchanged)
                    continue
                }
                change = created
            } catch {
                outcomes.append(.refused(error))
                continue
            }
            let marks = change.encodedBody.flatMap(BodyMarks.of)
            // The checks read the object itself, and later objects' checks read it too (a room
            // made in the batch is there for the check of a message put into it).
            transaction.record.known[object.key] = (object.partition.description, change.after)
            do {
                // Marks are found on the text: a body without the name has no reference.
                if marks.map({ $0.rawValue & BodyMarks.blob.rawValue != 0 }) ?? true {
                    try await transaction.checkBlobReferences([change], in: object.partition)
                }
                try await validate?([change], object.partition, transaction)
            } catch let error as SyncError where error.isRefusal {
                transaction.record.known[object.key] = nil
                outcomes.append(.refused(error))
                continue
            }
            rows.append(WriteTransaction.NewRow(partition: object.partition, change: change, marks: marks))
            outcomes.append(.imported)
        }
        try await transaction.insertNew(rows)
        return outcomes
    }

    /// The careful path of ``importObjects(_:author:validate:commit:provisionalBlobs:)``: a
    /// `put` per object through the upload planner, every key read after the locks.
    private func importCarefully(
        _ objects: [NewObject], partitions: [Partition], author: String, validate: ImportValidator?, commit: Bool,
        provisionalBlobs: [BlobReference]
    ) async throws -> [ImportOutcome] {
        let guarded: ImportValidator = { changes, partition, transaction in
            for change in changes {
                if let conflict = Self.importConflict(change) { throw conflict }
            }
            try await validate?(changes, partition, transaction)
        }
        let uploads = objects.map { $0.upload(by: author) }
        let validators: [WriteTransaction.Check?] = uploads.map { upload in
            let partition = upload.partition
            return { changes, transaction in try await guarded(changes, partition, transaction) }
        }
        let keys = objects.map(\.key)
        do {
            return try await withWriteTransaction(author: author) { transaction in
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
                        SELECT unnest(\(provisionalBlobs.map(\.digest.rawValue))::text[]), \(author)
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
