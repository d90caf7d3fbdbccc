import Foundation
import PostgresNIO
import SyncProtocol

extension ObjectStore {
    /// Applies several uploads to one partition in one transaction, in order, with one commit:
    /// for a client that sends uploads faster than they commit one by one. Each upload is still
    /// all-or-nothing on its own (a savepoint each): a refused upload leaves the others applied.
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
        enum Step {
            case applied(UploadResult)
            case refused(SyncError)
            /// The request id has an outcome already: read it after the commit.
            case repeated
        }
        let steps: [Step] = try await withWriteTransaction(author: uploads[0].principal) { transaction in
            // Locked outside the savepoints, so a refused upload cannot release the lock.
            let version = try await transaction.lock([partition])[partition]!
            var steps: [Step] = []
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
}

/// Thrown inside an upload's savepoint when its request id already has an outcome.
private struct RepeatedBatchRequest: Error {}
