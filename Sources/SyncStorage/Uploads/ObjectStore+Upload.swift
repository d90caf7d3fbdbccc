import Foundation
import Locking
import PostgresNIO
import SyncProtocol

extension ObjectStore {
    /// Validates the changes of an upload inside its transaction; throwing refuses the upload.
    package typealias Validator = @Sendable (_ changes: [ObjectChange], _ transaction: WriteTransaction) async throws -> Void

    /// Applies one upload: a batch of one (``upload(batch:validators:)``). Every operation
    /// commits, or none does.
    ///
    /// Refusals are thrown ``SyncError``s. With a `requestId`, the outcome is recorded: a
    /// repeat returns the first outcome (an ``UploadResult`` with `isReplay`, or the same
    /// error) and applies nothing, even when both arrive at once.
    @discardableResult
    package func upload(_ upload: Upload, validate: Validator? = nil) async throws -> UploadResult {
        try await self.upload(batch: [upload], validators: [validate])[0].get()
    }

    /// ``upload(batch:validators:)`` with one validator for every upload.
    package func upload(batch uploads: [Upload], validate: Validator? = nil) async throws -> [Result<UploadResult, SyncError>] {
        try await upload(batch: uploads, validators: uploads.map { _ in validate })
    }

    /// The one way uploads are applied, from every transport: several uploads, of any
    /// partitions and principals, in one transaction with one commit when it can, so a client
    /// that sends uploads faster than they commit one by one, or many clients at once, are not
    /// held to a commit each. Each upload is still all-or-nothing on its own: uploads are
    /// computed and validated in memory (`validators[i]` for the i-th), each on top of the
    /// ones before it, and only the accepted ones are written, so a refused upload leaves the
    /// others applied. Uploads of one partition apply in their order. When (for several
    /// partitions) a partition is locked by another transaction for more than a moment, the
    /// uploads are applied partition by partition, each partition in a transaction of its own.
    ///
    /// Returns one result per upload, in order: an ``UploadResult`` (a replay for a repeated
    /// request id), or the ``SyncError`` that refused it. The applied uploads of one partition
    /// share the partition version of their transaction. An internal or transient error fails
    /// the whole batch (nothing of it is applied) and is thrown.
    package func upload(batch uploads: [Upload], validators: [Validator?]) async throws -> [Result<UploadResult, SyncError>] {
        precondition(validators.count == uploads.count, "one validator (or nil) per upload")
        guard !uploads.isEmpty else { return [] }
        let epoch = try await epoch()
        let batch = zip(uploads, validators).map { (upload: $0, validate: $1) }
        let several = Set(uploads.map(\.partition)).count > 1
        // A transaction holding several partition locks does not wait long for one: it could
        // deadlock with a trigger that locks them one by one in another order (PostgreSQL
        // would break that only after a second).
        let steps: [UploadStep]
        if let all = try await settle(batch, lockTimeout: several ? Self.batchLockTimeout : configuration.lockPatience) {
            steps = all
        } else if several {
            steps = try await settleByPartition(batch)
        } else {
            throw Self.partitionLocked
        }
        var results: [Result<UploadResult, SyncError>] = []
        for (upload, step) in zip(uploads, steps) {
            switch step {
            case .applied(let version, let timeline, let changes):
                results.append(.success(UploadResult(
                    partition: upload.partition, version: version,
                    cursor: CursorPosition(epoch: epoch, version: version, timeline: timeline).cursor, changes: changes, isReplay: false)))
            case .refused(let error):
                results.append(.failure(error))
            case .repeated:
                do {
                    results.append(.success(try await replay(upload, epoch: epoch)))
                } catch let error as SyncError where error.isRefusal {
                    results.append(.failure(error))
                }
            }
        }
        return results
    }

    /// How long a transaction of several partitions waits for one of their locks before its
    /// uploads are applied partition by partition.
    static let batchLockTimeout: Duration = .milliseconds(20)

    /// The answer to an upload that waited ``StorageConfiguration/lockPatience`` for its
    /// partition's lock in vain.
    static let partitionLocked = SyncError(.unavailable, "the partition is locked by another transaction; send the upload again later")

    /// Applies a batch in one transaction: every partition is locked and every touched object
    /// read in one round trip; every upload is computed and validated in memory on top of the
    /// ones before it; then all applied ones are written, their outcomes stored and their
    /// events recorded with one statement at commit — four round trips (BEGIN and COMMIT
    /// included), however many uploads and operations. `nil` when a lock was not granted
    /// within `lockTimeout` (nothing was written).
    ///
    /// The commit can find what the read could not: a request id whose outcome another
    /// transaction stored meanwhile, or a key created meanwhile in another partition. Then the
    /// transaction is rolled back and run again, the request ids answered meanwhile read first
    /// (each such conflict waited for the other transaction, which committed: the next attempt
    /// sees its writes, so attempts do not repeat a conflict).
    private func settle(_ batch: [(upload: Upload, validate: Validator?)], lockTimeout: Duration) async throws -> [UploadStep]? {
        let partitions = Array(Set(batch.map(\.upload.partition))).sorted()
        let keys = OperationApplier.keys(of: batch.flatMap(\.upload.operations))
        var answered: Set<RequestKey> = []
        for _ in 0...batch.count {
            let settled: Settled
            do {
                settled = try await withWriteTransaction(author: batch[0].upload.principal, beginsWithLock: true) { transaction -> TransactionEnd<Settled> in
                    transaction.mode = .deferred
                    try await transaction.lockAndLoad(partitions, keys, lockTimeout: lockTimeout)
                    let steps = try await transaction.stage(batch, answered: answered)
                    // Nothing applied: no partition version is taken; refusals are stored after.
                    guard steps.contains(where: \.isApplied) else { return .rollBack(.unapplied(steps)) }
                    if let conflict = try await transaction.finish() { return .rollBack(.conflict(conflict)) }
                    return .commit(.settled(steps))
                }
            } catch let error as PSQLError where error.isLockNotAvailable {
                return nil
            }
            switch settled {
            case .settled(let steps):
                return steps
            case .unapplied(let steps):
                return try await recordRefusals(batch.map(\.upload), steps)
            case .conflict(.outcomeExists):
                answered = try await answeredRequests(batch.map(\.upload))
            case .conflict(.createdElsewhere):
                continue
            }
        }
        throw SyncError(.unavailable, "the upload kept conflicting with concurrent uploads; send it again later")
    }

    /// What a transaction of ``settle(_:lockTimeout:)`` came to.
    private enum Settled: Sendable {
        /// Committed.
        case settled([UploadStep])
        /// Rolled back: no upload was applied.
        case unapplied([UploadStep])
        /// Rolled back: to run again.
        case conflict(WriteConflict)
    }

    /// Partition by partition, each in the order given, in transactions of their own (at
    /// once: one waiting for a lock does not hold up the others).
    private func settleByPartition(_ batch: [(upload: Upload, validate: Validator?)]) async throws -> [UploadStep] {
        var groups: [Partition: [Int]] = [:]
        for (index, entry) in batch.enumerated() { groups[entry.upload.partition, default: []].append(index) }
        let indices = Array(groups.values)
        // Each group's steps come back through `collected`, by the group's number: a child
        // returns nothing it captured. (A child closure that returned a captured array in its
        // result let the optimized build release that array twice, once with the closure and
        // once with the result: the crash under a frozen database, issue 29.)
        let collected = CollectedSteps()
        try await withThrowingDiscardingTaskGroup { tasks in
            for number in indices.indices {
                let group = indices[number].map { batch[$0] }
                tasks.addTask {
                    guard let groupSteps = try await self.settle(group, lockTimeout: self.configuration.lockPatience) else {
                        throw Self.partitionLocked
                    }
                    collected.steps.withLock { $0[number] = groupSteps }
                }
            }
        }
        var steps = Array(repeating: UploadStep.repeated, count: batch.count)
        let stepsByGroup = collected.steps.withLock { $0 }
        for (number, groupIndices) in indices.enumerated() {
            for (index, step) in zip(groupIndices, stepsByGroup[number] ?? []) { steps[index] = step }
        }
        return steps
    }

    /// The steps of the groups of a batch applied partition by partition, by group number.
    private final class CollectedSteps: Sendable {
        let steps = Locked<[Int: [UploadStep]]>([:])
    }

    /// Stores the outcomes of the refused uploads of a batch that applied none (its
    /// transaction was rolled back). A refusal whose request id has an outcome already (an
    /// earlier upload with this id committed meanwhile) becomes a repeat.
    private func recordRefusals(_ uploads: [Upload], _ steps: [UploadStep]) async throws -> [UploadStep] {
        var steps = steps
        for (index, upload) in uploads.enumerated() {
            guard case .refused(let error) = steps[index], let requestId = upload.requestId else { continue }
            let recorded = try await client.withOpenConnection { connection in
                try await record(Self.refusal(error), of: upload, requestId: requestId, on: connection)
            }
            if !recorded { steps[index] = .repeated }
        }
        return steps
    }

    /// The request ids of `uploads` that have an outcome stored.
    private func answeredRequests(_ uploads: [Upload]) async throws -> Set<RequestKey> {
        let keys = uploads.compactMap(\.requestKey)
        guard !keys.isEmpty else { return [] }
        let rows = try await client.fetch(
            """
            SELECT r.principal, r.request_id FROM psync_requests r
            JOIN unnest(\(keys.map(\.principal))::text[], \(keys.map(\.requestId))::text[]) AS k(principal, request_id)
              ON r.principal = k.principal AND r.request_id = k.request_id
            """, logger: logger)
        var answered: Set<RequestKey> = []
        for try await (principal, requestId) in rows.decode((String, String).self) {
            answered.insert(RequestKey(principal: principal, requestId: requestId))
        }
        return answered
    }

    static func checkRequestID(_ requestId: String?) throws(SyncError) {
        guard let requestId else { return }
        guard !requestId.isEmpty, requestId.count <= Upload.maximumRequestIDLength,
            !requestId.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else {
            throw SyncError(.badRequest, "a requestId has 1 to \(Upload.maximumRequestIDLength) characters")
        }
    }

    /// Stores an upload's outcome; `false` when one is already stored for its request id.
    func record(
        _ outcome: JSONValue, of upload: Upload, requestId: String, on connection: PostgresConnection
    ) async throws -> Bool {
        let rows = try await connection.query(
            """
            INSERT INTO psync_requests (principal, request_id, partition, outcome)
            VALUES (\(upload.principal), \(requestId), \(upload.partition.description), \(JSONB(value: outcome)))
            ON CONFLICT (principal, request_id) DO NOTHING
            RETURNING true
            """, logger: logger)
        for try await _ in rows { return true }
        return false
    }

    /// The stored outcome of an earlier upload with the same request id.
    func replay(_ upload: Upload, epoch: UUID) async throws -> UploadResult {
        // The partition's history comes with the outcome: an applied upload's cursor names the
        // timeline its version was written on.
        let rows = try await client.fetch(
            """
            SELECT r.partition, r.outcome, p.timeline, p.past_timelines, p.past_ends
            FROM psync_requests r LEFT JOIN psync_partitions p ON p.partition = r.partition
            WHERE r.principal = \(upload.principal) AND r.request_id = \(upload.requestId ?? "")
            """, logger: logger)
        for try await (partition, outcome, timeline, pastTimelines, pastEnds) in rows.decode(
            (String, JSONB, Int32?, [Int32]?, [Int64]?).self)
        {
            guard partition == upload.partition.description else {
                throw SyncError(
                    .badRequest, "requestId \(upload.requestId ?? "") was already used for partition \(partition)")
            }
            if let version = outcome.value["version"]?.intValue {
                // The outcome was stored by the commit at that version: it is in this history.
                let history = try timeline.map {
                    try PartitionHistory(timeline: $0, pastTimelines: pastTimelines ?? [], pastEnds: pastEnds ?? [])
                } ?? PartitionHistory()
                return UploadResult(
                    partition: upload.partition, version: version,
                    cursor: CursorPosition(epoch: epoch, version: version, timeline: history.timeline(of: version)).cursor,
                    changes: [], isReplay: true)
            }
            throw SyncError(
                SyncError.Code(outcome.value["code"]?.stringValue ?? "internal"),
                outcome.value["message"]?.stringValue ?? "the upload was refused", details: outcome.value["details"])
        }
        throw SyncError(.internal, "the outcome of a repeated upload could not be found")
    }

    /// The stored outcome of a refused upload: what ``replay(_:epoch:)`` throws again for it.
    static func refusal(_ error: SyncError) -> JSONValue {
        var fields: [String: JSONValue] = ["code": .string(error.code.rawValue), "message": .string(error.message)]
        if let details = error.details { fields["details"] = details }
        return .object(fields)
    }
}

extension PSQLError {
    /// A lock not granted within the transaction's lock timeout (`lock_not_available`, 55P03).
    var isLockNotAvailable: Bool { serverInfo?[.sqlState] == "55P03" }
}
