import CoreMetrics
import Logging
import Metrics
import PartitionSync
import SyncProtocol
import SyncStorage

/// Applies uploads for the WebSocket and HTTP endpoints alike: permission check, the storage
/// transaction with the application's validators, and for a refusal the compensating states
/// of the objects the upload touched.
struct UploadService: Sendable {
    enum Outcome: Sendable {
        case ack(UploadResult)
        /// Refused; nothing was applied. `objects` lets the client revert its copy.
        case rejected(SyncError, objects: [SyncObject])
        /// A transient failure (database unavailable, internal error): nothing is known to be
        /// refused, the client should retry later with the same request id.
        case failed(SyncError)
    }

    let store: ObjectStore
    let permissions: Permissions
    let metrics: ServerMetrics
    let logger: Logger
    /// Every upload goes through it: under load, many clients' uploads share a commit.
    let combiner: UploadCombiner

    init(
        store: ObjectStore, permissions: Permissions, metrics: ServerMetrics, logger: Logger, concurrency: Int = 2,
        timeout: Duration? = nil
    ) {
        self.store = store
        self.permissions = permissions
        self.metrics = metrics
        self.logger = logger
        self.combiner = UploadCombiner(store: store, concurrency: concurrency, timeout: timeout)
    }

    /// Checks an upload's changes with the application's validators, as `principal`.
    private func validator(in partition: Partition, by principal: Principal) -> ObjectStore.Validator {
        let permissions = self.permissions
        return { changes, transaction in
            try await permissions.validate(changes, in: partition, by: principal, transaction: transaction, logger: transaction.logger)
        }
    }

    /// Applies uploads of one principal to one partition, in order (see
    /// ``ObjectStore/upload(batch:validators:)``); one outcome per upload. The one entry of
    /// both transports: a WebSocket session hands over the uploads it has queued for the
    /// partition, an HTTP upload is a batch of one. `canWrite` is the session's cached write
    /// decision; without it the permission module is asked.
    func upload(
        batch: [(requestId: String, operations: [SyncOperation])], to partition: Partition, by principal: Principal,
        canWrite: Bool? = nil
    ) async -> [Outcome] {
        let started = ContinuousClock.now
        defer { metrics.uploadDuration.record(duration: ContinuousClock.now - started) }
        let allowed: Bool
        if let canWrite {
            allowed = canWrite
        } else {
            do {
                allowed = try await permissions.canWrite(principal, partition, context: PermissionContext(source: StoreObjectSource(store: store), logger: logger))
            } catch {
                return await fail(batch, error, partition, principal)
            }
        }
        guard allowed else {
            return await batch.asyncMap {
                await reject(SyncError(.permissionDenied, "you may not write to \(partition)"), $0.operations, partition, principal)
            }
        }
        let results: [Result<UploadResult, SyncError>]
        do {
            results = try await combiner.upload(
                batch.map { Upload(partition: partition, operations: $0.operations, principal: principal.description, requestId: $0.requestId) },
                validate: validator(in: partition, by: principal))
        } catch {
            return await fail(batch, error, partition, principal)
        }
        var outcomes: [Outcome] = []
        for (upload, result) in zip(batch, results) {
            switch result {
            case .success(let result):
                await Failpoint.stop(at: .afterCommitBeforeAck, for: upload.requestId)
                metrics.countUpload("ack")
                outcomes.append(.ack(result))
            case .failure(let error):
                outcomes.append(await reject(error, upload.operations, partition, principal))
            }
        }
        return outcomes
    }

    /// The outcomes of a batch that failed as a whole: each upload refused by a refusal,
    /// failed (to be sent again) by anything else.
    private func fail(
        _ batch: [(requestId: String, operations: [SyncOperation])], _ error: any Error, _ partition: Partition, _ principal: Principal
    ) async -> [Outcome] {
        if let error = error as? SyncError, error.isRefusal {
            return await batch.asyncMap { await reject(error, $0.operations, partition, principal) }
        }
        let failure = ServerError.describe(error, logger: logger)
        for _ in batch {
            metrics.countUpload("error")
            metrics.countError(failure.code.rawValue)
        }
        return batch.map { _ in .failed(failure) }
    }

    private func reject(_ error: SyncError, _ operations: [SyncOperation], _ partition: Partition, _ principal: Principal) async -> Outcome {
        metrics.countUpload("rejected")
        metrics.countError(error.code.rawValue)
        do {
            return .rejected(error, objects: try await compensatingStates(operations, partition, principal))
        } catch {
            return .failed(ServerError.describe(error, logger: logger))
        }
    }

    /// The server's state of every object the upload touched: its stored state when it is in
    /// this partition and the principal may read the partition, else a tombstone at version 0
    /// ("the server has no such object here"), so nothing of other partitions leaks.
    private func compensatingStates(_ operations: [SyncOperation], _ partition: Partition, _ principal: Principal) async throws -> [SyncObject] {
        let keys = OperationApplier.keys(of: operations)
        let context = PermissionContext(source: StoreObjectSource(store: store), logger: logger)
        let readable = (try? await permissions.canRead(principal, partition, context: context)) ?? false
        var stored: [ObjectKey: SyncObject] = [:]
        if readable {
            for entry in try await store.objects(keys) where entry.partition == partition.description {
                stored[entry.object.key] = entry.object
            }
        }
        return keys.map { stored[$0] ?? SyncObject(key: $0, version: 0, body: nil) }
    }
}

/// Turns unexpected errors into contract errors without leaking their details.
enum ServerError {
    static func describe(_ error: any Error, logger: Logger) -> SyncError {
        if let error = error as? SyncError { return error }
        if let error = error as? PostgresUnavailable { return SyncError(.unavailable, error.message) }
        // The work was cancelled: its client went away, or the server is stopping. Nobody
        // waits for an answer; this is no error of the server's.
        if error is CancellationError {
            logger.debug("cancelled", metadata: ["error": "\(error)"])
            return SyncError(.unavailable, "the request was cancelled")
        }
        let text = String(reflecting: error)
        if isDatabaseUnavailable(error) {
            logger.warning("database unavailable", metadata: ["error": "\(text.prefix(300))"])
            return SyncError(.unavailable, "the database is unavailable; retry later")
        }
        logger.error("internal error", metadata: ["error": "\(text.prefix(500))"])
        return SyncError(.internal, "an internal error occurred")
    }
}

/// A database that cannot be reached.
struct PostgresUnavailable: Error {
    var message: String
}

extension Array {
    /// The elements transformed one after the other, in order.
    func asyncMap<T>(_ transform: (Element) async -> T) async -> [T] {
        var result: [T] = []
        result.reserveCapacity(count)
        for element in self { result.append(await transform(element)) }
        return result
    }
}
