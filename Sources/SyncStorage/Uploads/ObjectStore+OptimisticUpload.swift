import Foundation
import PostgresNIO
import SyncProtocol

extension ObjectStore {
    /// The first way to apply a batch of uploads (``upload(batch:validators:)``): in two round
    /// trips, or one, instead of a transaction's four. The objects the uploads touch are read
    /// without locks — or not read at all when the uploads only put objects, which are then
    /// taken to be new, as they usually are (``NewObjectGuess``) — the uploads are computed and
    /// validated on top of that, and one statement that commits on its own locks the
    /// partitions, checks that every object is still as it was taken to be, and writes the
    /// changes, the outcomes and the events (``WriteTransaction/commitOptimistically(lockTimeout:)``).
    /// A wrong guess is followed by one attempt that reads.
    ///
    /// Returns `nil` when that cannot decide alone (an object changed meanwhile, a request id
    /// repeats or has an outcome already, a lock was not granted in time): nothing was
    /// written, and the batch is applied again the careful way. A batch whose uploads were all
    /// refused writes only their outcomes and locks nothing.
    func optimisticBatch(
        _ batch: [(upload: Upload, validate: Validator?)], epoch: UUID
    ) async throws -> [Result<UploadResult, SyncError>]? {
        guard configuration.optimisticUploads else { return nil }
        let requests = batch.compactMap { entry in entry.upload.requestId.map { "\(entry.upload.principal)\u{0}\($0)" } }
        guard Set(requests).count == requests.count else { return nil }
        let operations = batch.flatMap(\.upload.operations)
        // A new blob reference is checked under a lock held to the commit, which only a
        // transaction has (``WriteTransaction/checkBlobReferences(_:of:)``).
        guard !operations.contains(where: \.mayAddBlobReference) else { return nil }
        let onlyPuts = operations.allSatisfy {
            if case .put = $0 { return true }
            return false
        }
        let collections = Set(operations.map(\.key.collection))
        if onlyPuts, newObjectGuess.guess(collections) {
            if let results = try await optimisticAttempt(batch, operations, epoch: epoch, assumingAbsent: true) { return results }
            newObjectGuess.failed(collections)
        }
        return try await optimisticAttempt(batch, operations, epoch: epoch, assumingAbsent: false)
    }

    /// One optimistic attempt; `nil` when its commit found a conflict.
    private func optimisticAttempt(
        _ batch: [(upload: Upload, validate: Validator?)], _ operations: [SyncOperation], epoch: UUID, assumingAbsent: Bool
    ) async throws -> [Result<UploadResult, SyncError>]? {
        do {
            return try await client.withOpenConnection { connection in
                let transaction = WriteTransaction(connection: connection, store: self, author: batch[0].upload.principal, depth: 0)
                try await transaction.readOptimistically(
                    Array(Set(batch.map(\.upload.partition))), OperationApplier.keys(of: operations), assumingAbsent: assumingAbsent)
                // JSON null: the statement stores the partition's new version.
                let outcomes = try await transaction.stage(batch) { _ in .null }
                let accepted = Set(zip(batch, outcomes).compactMap { entry, outcome in
                    if case .success = outcome { return entry.upload.partition }
                    return nil
                })
                // Only the partitions of accepted uploads are locked and get a new version.
                transaction.versions = transaction.versions.filter { accepted.contains($0.key) }
                do {
                    try await transaction.commitOptimistically(lockTimeout: accepted.count > 1 ? Self.batchLockTimeout : configuration.lockPatience)
                } catch {
                    await closeIfOutgrown(transaction, connection)
                    throw error
                }
                committed(transaction)
                await closeIfOutgrown(transaction, connection)
                return zip(batch, outcomes).map { entry, outcome in
                    outcome.map { changes in
                        let version = transaction.versions[entry.upload.partition]!
                        return UploadResult(
                            partition: entry.upload.partition, version: version,
                            cursor: CursorPosition(epoch: epoch, version: version).cursor, changes: changes, isReplay: false)
                    }
                }
            }
        } catch is OptimisticConflict {
            return nil
        }
    }
}
