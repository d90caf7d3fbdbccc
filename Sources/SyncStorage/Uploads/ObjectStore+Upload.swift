import Foundation
import PostgresNIO
import SyncProtocol

extension ObjectStore {
    /// Validates the changes of an upload inside its transaction; throwing refuses the upload.
    package typealias Validator = @Sendable (_ changes: [ObjectChange], _ transaction: WriteTransaction) async throws -> Void

    /// Applies an upload in one transaction: every operation commits, or none does.
    ///
    /// Refusals are ``SyncError``s. With a `requestId`, the outcome is recorded: a repeat
    /// returns the first outcome (an ``UploadResult`` with `isReplay`, or the same error)
    /// and applies nothing, even when both arrive at once.
    @discardableResult
    package func upload(_ upload: Upload, validate: Validator? = nil) async throws -> UploadResult {
        try Self.checkRequestID(upload.requestId)
        let epoch = try await epoch()
        do {
            return try await lockedUpload(upload, validate: validate, epoch: epoch)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "55P03" {
            throw SyncError(.unavailable, "the partition is locked by another transaction; send the upload again later")
        }
    }

    /// ``upload(_:validate:)`` in a transaction that locks the partition before it reads.
    func lockedUpload(_ upload: Upload, validate: Validator?, epoch: UUID) async throws -> UploadResult {
        do {
            return try await withWriteTransaction(author: upload.principal) { transaction in
                // Lock and read, compute and validate, then write, store the outcome and
                // record the events in one statement at commit: four round trips in all
                // (BEGIN and COMMIT included), however many operations.
                transaction.defersWrites = true
                // Waits for the partition's lock only so long (then 55P03: `unavailable`).
                try await transaction.lockAndLoad(
                    [upload.partition], OperationApplier.keys(of: upload.operations), lockTimeout: configuration.lockPatience)
                let changes = try await transaction.apply(upload.operations, in: upload.partition) { changes, transaction in
                    try await validate?(changes, transaction)
                }
                let version = transaction.versions[upload.partition]!
                if let requestId = upload.requestId {
                    transaction.recordOutcome(["version": .int(version)], of: upload, requestId: requestId)
                }
                return UploadResult(
                    partition: upload.partition, version: version,
                    cursor: CursorPosition(epoch: epoch, version: version).cursor, changes: changes, isReplay: false)
            }
        } catch is OutcomeExists {
            return try await replay(upload, epoch: epoch)
        } catch let error as SyncError where error.code != .internal && error.code != .unavailable {
            guard let requestId = upload.requestId else { throw error }
            let recorded = try await client.withOpenConnection { connection in
                try await record(Self.refusal(error), of: upload, requestId: requestId, on: connection)
            }
            if !recorded { return try await replay(upload, epoch: epoch) }
            throw error
        }
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
        let rows = try await client.fetch(
            """
            SELECT partition, outcome FROM psync_requests
            WHERE principal = \(upload.principal) AND request_id = \(upload.requestId ?? "")
            """, logger: logger)
        for try await (partition, outcome) in rows.decode((String, JSONB).self) {
            guard partition == upload.partition.description else {
                throw SyncError(
                    .badRequest, "requestId \(upload.requestId ?? "") was already used for partition \(partition)")
            }
            if let version = outcome.value["version"]?.intValue {
                return UploadResult(
                    partition: upload.partition, version: version,
                    cursor: CursorPosition(epoch: epoch, version: version).cursor, changes: [], isReplay: true)
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
