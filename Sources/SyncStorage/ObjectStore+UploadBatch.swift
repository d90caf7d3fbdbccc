import Foundation
import PostgresNIO
import SyncProtocol

extension ObjectStore {
    /// Applies several uploads to one partition in one transaction, in order, with one commit:
    /// for a client that sends uploads faster than they commit one by one. Each upload is still
    /// all-or-nothing on its own: uploads are computed and validated in memory, each on top of
    /// the ones before it, and only the accepted ones are written, so a refused upload leaves
    /// the others applied. (When a request id repeats or a write conflicts, the batch is
    /// applied again with a savepoint per upload.)
    ///
    /// Returns one result per upload, in order: an ``UploadResult`` (a replay for a repeated
    /// request id), or the ``SyncError`` that refused it. All applied uploads share the
    /// partition version of the batch. An internal or transient error fails the whole batch
    /// (nothing is applied) and is thrown.
    public func upload(batch uploads: [Upload], validate: Validator? = nil) async throws -> [Result<UploadResult, SyncError>] {
        guard let partition = uploads.first?.partition else { return [] }
        precondition(uploads.allSatisfy { $0.partition == partition && $0.principal == uploads[0].principal }, "a batch is one partition and one principal")
        if uploads.count == 1 {
            do {
                return [.success(try await upload(uploads[0], validate: validate))]
            } catch let error as SyncError where error.code != .internal && error.code != .unavailable {
                return [.failure(error)]
            }
        }
        let epoch = try await epoch()
        let steps: [BatchStep]
        do {
            steps = try await stagedBatch(uploads, epoch: epoch, validate: validate)
        } catch is BatchConflict {
            steps = try await savepointBatch(uploads, epoch: epoch, validate: validate)
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

    /// The usual way: every upload is computed and validated in memory on top of the ones
    /// before it, then all applied ones are written with one statement and all outcomes
    /// recorded with another — a constant number of statements per batch. Throws
    /// ``BatchConflict`` (after rolling back) when that cannot decide alone: a request id
    /// already has an outcome, or appears twice, or an object was created meanwhile in
    /// another partition.
    private func stagedBatch(_ uploads: [Upload], epoch: UUID, validate: Validator?) async throws -> [BatchStep] {
        let partition = uploads[0].partition
        let ids = uploads.compactMap(\.requestId)
        guard Set(ids).count == ids.count else { throw BatchConflict() }
        return try await withWriteTransaction(author: uploads[0].principal) { transaction in
            let version = try await transaction.lock([partition])[partition]!
            // Every touched object in one read; the uploads then read from the transaction.
            _ = try await transaction.load(OperationApplier.keys(of: uploads.flatMap(\.operations)))
            var steps: [BatchStep] = []
            var outcomes: [(Upload, JSONValue)] = []
            for upload in uploads {
                do throws(SyncError) {
                    try Self.checkRequestID(upload.requestId)
                } catch {
                    steps.append(.refused(error))
                    continue
                }
                do {
                    let changes = try await transaction.stage(upload.operations, in: partition) { changes, transaction in
                        try await validate?(changes, transaction)
                    }
                    outcomes.append((upload, ["version": .int(version)]))
                    steps.append(.applied(UploadResult(
                        partition: partition, version: version, cursor: CursorPosition(epoch: epoch, version: version).cursor,
                        changes: changes, isReplay: false)))
                } catch let error as SyncError where error.code != .internal && error.code != .unavailable {
                    outcomes.append((upload, ["code": .string(error.code.rawValue), "message": .string(error.message)]))
                    steps.append(.refused(error))
                }
            }
            do {
                try await transaction.writeStaged()
            } catch let error as SyncError where error.code == .partitionMismatch {
                throw BatchConflict()
            }
            guard try await record(outcomes, on: transaction.connection) else { throw BatchConflict() }
            return steps
        }
    }

    /// Stores the outcomes of several uploads with request ids; `false` when one of them has
    /// an outcome already.
    func record(_ outcomes: [(Upload, JSONValue)], on connection: PostgresConnection) async throws -> Bool {
        let withIDs = outcomes.compactMap { upload, outcome in upload.requestId.map { (upload, $0, outcome) } }
        guard !withIDs.isEmpty else { return true }
        let rows = try await connection.query(
            """
            INSERT INTO psync_requests (principal, request_id, partition, outcome)
            SELECT * FROM unnest(\(withIDs.map(\.0.principal))::text[], \(withIDs.map(\.1))::text[],
                                 \(withIDs.map(\.0.partition.description))::text[], \(withIDs.map { JSONB(value: $0.2) })::jsonb[])
            ON CONFLICT (principal, request_id) DO NOTHING
            RETURNING true
            """, logger: logger)
        var inserted = 0
        for try await _ in rows { inserted += 1 }
        return inserted == withIDs.count
    }

    /// The careful way, when ``stagedBatch(_:epoch:validate:)`` could not decide: each upload
    /// in a savepoint of its own, written and recorded one by one.
    private func savepointBatch(_ uploads: [Upload], epoch: UUID, validate: Validator?) async throws -> [BatchStep] {
        let partition = uploads[0].partition
        return try await withWriteTransaction(author: uploads[0].principal) { transaction in
            // Locked outside the savepoints, so a refused upload cannot release the lock.
            let version = try await transaction.lock([partition])[partition]!
            var steps: [BatchStep] = []
            for upload in uploads {
                do throws(SyncError) {
                    try Self.checkRequestID(upload.requestId)
                } catch {
                    steps.append(.refused(error))
                    continue
                }
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
                        let outcome: JSONValue = ["code": .string(error.code.rawValue), "message": .string(error.message)]
                        guard try await record(outcome, of: upload, requestId: requestId, on: transaction.connection) else {
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
