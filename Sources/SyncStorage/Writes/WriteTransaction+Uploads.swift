import SyncProtocol

extension WriteTransaction {
    /// Stages a batch of uploads, each all-or-nothing on top of the ones before it, with its
    /// outcome queued for the commit: `accepted(upload)` for an accepted one (with a request
    /// id), the error for a refused one. One result per upload: its changes, or why it was
    /// refused. Every partition must be locked first.
    func stage(
        _ batch: [(upload: Upload, validate: ObjectStore.Validator?)], accepted: (Upload) -> JSONValue
    ) async throws -> [Result<[ObjectChange], SyncError>] {
        var results: [Result<[ObjectChange], SyncError>] = []
        for (upload, validate) in batch {
            do throws(SyncError) {
                try ObjectStore.checkRequestID(upload.requestId)
            } catch {
                results.append(.failure(error))
                continue
            }
            author = upload.principal
            do {
                let changes = try await stage(upload.operations, in: upload.partition) { changes, transaction in
                    try await validate?(changes, transaction)
                }
                if let requestId = upload.requestId { recordOutcome(accepted(upload), of: upload, requestId: requestId) }
                results.append(.success(changes))
            } catch let error as SyncError where error.code != .internal && error.code != .unavailable {
                if let requestId = upload.requestId {
                    recordOutcome(ObjectStore.refusal(error), of: upload, requestId: requestId)
                }
                results.append(.failure(error))
            }
        }
        return results
    }
}
