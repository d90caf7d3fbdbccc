import Foundation
import Locking
import PostgresNIO
import SyncProtocol

extension ObjectStore {
    /// ``upload(batch:validators:)`` with one validator for every upload.
    package func upload(batch uploads: [Upload], validate: Validator? = nil) async throws -> [Result<UploadResult, SyncError>] {
        try await upload(batch: uploads, validators: uploads.map { _ in validate })
    }

    /// Applies several uploads, of any partitions and principals, in one transaction with one
    /// commit when it can: a client that sends uploads faster than they commit one by one, or
    /// many clients at once, are not held to a commit each. Each upload is still all-or-nothing
    /// on its own: uploads are computed and validated in memory (`validators[i]` for the
    /// i-th), each on top of the ones before it, and only the accepted ones are written, so a
    /// refused upload leaves the others applied. Uploads of one partition apply in their
    /// order. When a request id repeats, a write conflicts, or (for several partitions) a
    /// partition is locked by another transaction for more than a moment, the uploads are
    /// applied again partition by partition, with a savepoint per upload if need be.
    ///
    /// Returns one result per upload, in order: an ``UploadResult`` (a replay for a repeated
    /// request id), or the ``SyncError`` that refused it. The applied uploads of one partition
    /// share the partition version of their transaction. An internal or transient error fails
    /// the whole batch (nothing of it is applied) and is thrown.
    package func upload(batch uploads: [Upload], validators: [Validator?]) async throws -> [Result<UploadResult, SyncError>] {
        precondition(validators.count == uploads.count, "one validator (or nil) per upload")
        guard !uploads.isEmpty else { return [] }
        do {
            return try await applyBatch(uploads, validators: validators)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "55P03" {
            // Another transaction held a partition's lock for longer than ``StorageConfiguration/lockPatience``.
            throw SyncError(.unavailable, "the partition is locked by another transaction; send the upload again later")
        }
    }

    private func applyBatch(_ uploads: [Upload], validators: [Validator?]) async throws -> [Result<UploadResult, SyncError>] {
        let epoch = try await epoch()
        let batch = zip(uploads, validators).map { (upload: $0, validate: $1) }
        if uploads.count == 1 {
            do {
                return [.success(try await lockedUpload(uploads[0], validate: validators[0], epoch: epoch))]
            } catch let error as SyncError where error.code != .internal && error.code != .unavailable {
                return [.failure(error)]
            }
        }
        var steps: [BatchStep]
        do {
            steps = try await stagedBatch(batch, epoch: epoch)
        } catch is BatchConflict {
            // Partition by partition, each in the order given, in transactions of their own
            // (at once: one waiting for a lock does not hold up the others).
            var groups: [Partition: [Int]] = [:]
            for (index, entry) in batch.enumerated() { groups[entry.upload.partition, default: []].append(index) }
            let indices = Array(groups.values)
            // Each group's steps come back through `collected`, by the group's number: a child
            // returns nothing it captured. (A child closure that returned a captured array in
            // its result let the optimized build release that array twice, once with the
            // closure and once with the result: the crash under a frozen database, issue 29.)
            let collected = CollectedSteps()
            try await withThrowingDiscardingTaskGroup { tasks in
                for number in indices.indices {
                    let group = indices[number].map { batch[$0] }
                    tasks.addTask {
                        let groupSteps: [BatchStep]
                        do {
                            groupSteps = try await self.stagedBatch(group, epoch: epoch)
                        } catch is BatchConflict {
                            groupSteps = try await self.savepointBatch(group, epoch: epoch)
                        }
                        collected.steps.withLock { $0[number] = groupSteps }
                    }
                }
            }
            steps = Array(repeating: .repeated, count: batch.count)
            let stepsByGroup = collected.steps.withLock { $0 }
            for (number, groupIndices) in indices.enumerated() {
                for (index, step) in zip(groupIndices, stepsByGroup[number] ?? []) { steps[index] = step }
            }
        }
        var results: [Result<UploadResult, SyncError>] = []
        for (upload, step) in zip(uploads, steps) {
            switch step {
            case .applied(let result): results.append(.success(result))
            case .refused(let error): results.append(.failure(error))
            case .repeated:
                do {
                    results.append(.success(try await replay(upload, epoch: epoch)))
                } catch let error as SyncError where error.code != .internal && error.code != .unavailable {
                    results.append(.failure(error))
                }
            }
        }
        return results
    }

    /// The steps of the groups of a batch applied partition by partition, by group number.
    private final class CollectedSteps: Sendable {
        let steps = Locked<[Int: [BatchStep]]>([:])
    }

    /// The usual way: every partition is locked and every touched object read in one round
    /// trip; every upload is computed and validated in memory on top of the ones before it;
    /// then all applied ones are written, their outcomes stored and their events recorded with
    /// one statement at commit — a constant number of statements per batch. Throws
    /// ``BatchConflict`` (after rolling back) when that cannot decide alone: a request id
    /// already has an outcome, or appears twice, or an object was created meanwhile in
    /// another partition, or (several partitions) a lock was not granted at once.
    private func stagedBatch(_ batch: [(upload: Upload, validate: Validator?)], epoch: UUID) async throws -> [BatchStep] {
        let requests = batch.compactMap { entry in entry.upload.requestId.map { "\(entry.upload.principal)\u{0}\($0)" } }
        guard Set(requests).count == requests.count else { throw BatchConflict() }
        let partitions = Array(Set(batch.map(\.upload.partition))).sorted()
        do {
            return try await withWriteTransaction(author: batch[0].upload.principal) { transaction in
                transaction.defersWrites = true
                // Locked, and every touched object read, in one round trip; the uploads then
                // read from the transaction. A transaction holding several partition locks
                // does not wait for one: it could deadlock with a trigger that locks them one
                // by one in another order (PostgreSQL would break that only after a second).
                try await transaction.lockAndLoad(
                    partitions, OperationApplier.keys(of: batch.flatMap(\.upload.operations)),
                    lockTimeout: partitions.count > 1 ? Self.batchLockTimeout : configuration.lockPatience)
                let staged = try await transaction.stage(batch) { upload in ["version": .int(transaction.versions[upload.partition]!)] }
                let steps: [BatchStep] = zip(batch, staged).map { entry, outcome in
                    switch outcome {
                    case .success(let changes):
                        let version = transaction.versions[entry.upload.partition]!
                        return .applied(UploadResult(
                            partition: entry.upload.partition, version: version,
                            cursor: CursorPosition(epoch: epoch, version: version).cursor, changes: changes, isReplay: false))
                    case .failure(let error):
                        return .refused(error)
                    }
                }
                // The staged changes, the outcomes and the events are written at commit.
                return steps
            }
        } catch is OutcomeExists {
            throw BatchConflict()
        } catch let error as SyncError where error.code == .partitionMismatch {
            throw BatchConflict()
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "55P03" {
            throw BatchConflict()
        }
    }

    /// How long a transaction of several partitions waits for one of their locks before its
    /// uploads are applied partition by partition.
    static let batchLockTimeout: Duration = .milliseconds(20)

    /// The careful way, for uploads of one partition, when ``stagedBatch(_:epoch:)`` could not
    /// decide: each upload in a savepoint of its own, written and recorded one by one.
    private func savepointBatch(_ batch: [(upload: Upload, validate: Validator?)], epoch: UUID) async throws -> [BatchStep] {
        let partition = batch[0].upload.partition
        return try await withWriteTransaction(author: batch[0].upload.principal) { transaction in
            // Locked outside the savepoints, so a refused upload cannot release the lock.
            try await transaction.lockAndLoad([partition], [], lockTimeout: configuration.lockPatience)
            let version = transaction.versions[partition]!
            var steps: [BatchStep] = []
            for (upload, validate) in batch {
                do throws(SyncError) {
                    try Self.checkRequestID(upload.requestId)
                } catch {
                    steps.append(.refused(error))
                    continue
                }
                transaction.author = upload.principal
                do {
                    let changes = try await transaction.withSavepoint {
                        let changes = try await transaction.apply(upload.operations, in: partition) { changes, transaction in
                            try await validate?(changes, transaction)
                        }
                        if let requestId = upload.requestId {
                            guard try await record(["version": .int(version)], of: upload, requestId: requestId, on: transaction.connection) else {
                                throw RepeatedBatchRequest()
                            }
                        }
                        return changes
                    }
                    steps.append(.applied(UploadResult(
                        partition: partition, version: version, cursor: CursorPosition(epoch: epoch, version: version).cursor,
                        changes: changes, isReplay: false)))
                } catch is RepeatedBatchRequest {
                    steps.append(.repeated)
                } catch let error as SyncError where error.code != .internal && error.code != .unavailable {
                    if let requestId = upload.requestId {
                        guard try await record(Self.refusal(error), of: upload, requestId: requestId, on: transaction.connection) else {
                            steps.append(.repeated)
                            continue
                        }
                    }
                    steps.append(.refused(error))
                }
            }
            return steps
        }
    }
}

/// What became of one upload of a batch inside its transaction.
private enum BatchStep {
    case applied(UploadResult)
    case refused(SyncError)
    /// The request id has an outcome already: read it after the commit.
    case repeated
}

/// The staged way cannot decide a batch alone; it was rolled back.
private struct BatchConflict: Error {}

/// Thrown inside an upload's savepoint when its request id already has an outcome.
private struct RepeatedBatchRequest: Error {}
