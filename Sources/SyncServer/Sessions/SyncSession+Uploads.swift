import Foundation
import Locking
import Logging
import NIOWebSocket
import PartitionSync
import Synchronization
import SyncProtocol
import SyncStorage

extension SyncSession {
    /// Most uploads the reader queues before it stops reading (the client then waits on TCP).
    /// Most uploads applied in one transaction.
    static let maximumBatchUploads = 100
    /// Most operations in one transaction (several uploads' together).
    static let maximumBatchOperations = 5_000

    /// Queues an upload for the worker; waits while the queue is full (the worker resumes
    /// the wait when it takes uploads, a close when the session ends).
    func enqueueUpload(_ upload: QueuedUpload) async {
        let limit = max(1, services.configuration.maximumQueuedUploads)
        let isFull: @Sendable (State) -> Bool = { $0.uploads.count >= limit && !$0.lifecycle.isClosing }
        while state.withLock({ isFull($0) }) {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let wait = state.withLock { state -> Bool in
                        guard isFull(state), !Task.isCancelled else { return false }
                        state.uploadRoom = continuation
                        return true
                    }
                    if !wait { continuation.resume() }
                }
            } onCancel: {
                state.withLock { state in
                    defer { state.uploadRoom = nil }
                    return state.uploadRoom
                }?.resume()
            }
            if Task.isCancelled { return }
        }
        state.withLock { $0.uploads.append(upload) }
        requestWork()
    }

    /// What became of the queued uploads.
    enum UploadsApplied {
        /// Every queued upload was applied and answered (or there were none).
        case done
        /// The server is shutting down: the session was closed after the last answer.
        case closed
    }

    /// Applies the queued uploads in order. The uploads at the head of the queue that go to
    /// the same partition are applied together, in one transaction with one commit (each
    /// still all-or-nothing): a client sending faster than single commits go through is not
    /// held to one commit per upload.
    func applyQueuedUploads() async -> UploadsApplied {
        while let batch = takeUploadBatch() {
            let (answers, commit) = await apply(batch)
            for case .error(let error, _) in answers { services.metrics.countError(error.code.rawValue) }
            let texts = answers.map { $0.json.jsonString }
            // The answers and the release of the partition's pages, as one event (the commit's
            // pages may be queued already: the answers go before them).
            let (outcome, closeNow) = state.withLock { state in
                let outcome = state.outbox.uploadAnswered(state.lifecycle.isClosing ? [] : texts, partition: batch[0].partition, commit: commit)
                return (outcome, state.lifecycle.uploadBatchAnswered())
            }
            if outcome == .overflow { close(.unknown(4002), "the client does not read its messages") }
            signalWriter()
            if closeNow {
                close(.goingAway, "the server is shutting down")
                return .closed
            }
        }
        return .done
    }

    /// Takes the uploads at the head of the queue to one partition; `nil` when there are
    /// none, or the session is closing (uploads not begun are dropped: the client resends
    /// them, and their request ids make that harmless).
    private func takeUploadBatch() -> [QueuedUpload]? {
        let (batch, reader) = state.withLock { state -> ([QueuedUpload]?, CheckedContinuation<Void, Never>?) in
            guard state.lifecycle.acceptsUploadBatch, let first = state.uploads.first else { return (nil, nil) }
            var batch: [QueuedUpload] = []
            var operations = 0
            while let next = state.uploads.first, next.partition == first.partition, batch.count < Self.maximumBatchUploads,
                batch.isEmpty || operations + next.operations.count <= Self.maximumBatchOperations
            {
                batch.append(state.uploads.removeFirst())
                operations += next.operations.count
            }
            state.lifecycle.uploadBatchBegan()
            state.outbox.uploadBegan(to: first.partition)
            defer { state.uploadRoom = nil }
            return (batch, state.uploadRoom)
        }
        reader?.resume()
        return batch
    }

    /// Checks the write permission once for the batch and applies it: the answer to each
    /// upload, in order, and the version the batch committed (`nil` when it committed nothing
    /// new).
    private func apply(_ batch: [QueuedUpload]) async -> (answers: [ServerMessage], commit: Int64?) {
        guard let principal else { return ([], nil) }
        let partition = batch[0].partition
        var canWrite = state.withLock { $0.writeDecisions[partition]?.allowed }
        if canWrite == nil {
            do {
                let decision = try await services.permissions.decideWrite(principal, partition, context: services.permissionContext)
                let replaced = state.withLock { state in
                    defer { state.writeDecisions[partition] = decision }
                    return state.writeDecisions[partition]?.inputs ?? []
                }
                // Watched after the decision read them: a change in between is caught by the
                // versions read, and clears the decision again.
                retainInputs(decision.inputs, versionsRead: decision.versionsRead)
                releaseInputs(replaced)
                canWrite = decision.allowed
            } catch {
                let failure = ServerError.describe(error, logger: logger)
                return (batch.map { _ in .error(failure, partition: partition) }, nil)
            }
        }
        let outcomes = await services.uploads.upload(
            batch: batch.map { ($0.requestId, $0.operations) }, to: partition, by: principal, canWrite: canWrite ?? false)
        let commit = outcomes.lazy.compactMap { outcome -> Int64? in
            if case .ack(let result) = outcome, !result.isReplay { return result.version }
            return nil
        }.first
        let answers = zip(batch, outcomes).map { upload, outcome -> ServerMessage in
            switch outcome {
            case .ack(let result):
                .ack(requestId: upload.requestId, partition: partition, cursor: result.cursor, version: result.version)
            case .rejected(let error, let objects):
                .rejected(requestId: upload.requestId, partition: partition, error: error, objects: objects)
            case .failed(let error):
                .error(error, partition: partition)
            }
        }
        return (answers, commit)
    }
}
