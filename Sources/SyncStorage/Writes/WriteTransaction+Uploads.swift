import SyncProtocol

extension WriteTransaction {
    /// Stages a batch of uploads, each all-or-nothing on top of the ones before it, with its
    /// outcome queued for the commit (the version for an accepted one, the error for a
    /// refused one). An upload whose request id is in `answered`, or repeats one earlier in
    /// the batch, is ``UploadStep/repeated``: nothing of it is staged. Every partition must be
    /// locked first. One step per upload.
    func stage(
        _ batch: [(upload: Upload, validate: ObjectStore.Validator?)], answered: Set<RequestKey> = []
    ) async throws -> [UploadStep] {
        var answered = answered
        var steps: [UploadStep] = []
        for (upload, validate) in batch {
            do throws(SyncError) {
                try ObjectStore.checkRequestID(upload.requestId)
            } catch {
                steps.append(.refused(error))
                continue
            }
            if let key = upload.requestKey, !answered.insert(key).inserted {
                steps.append(.repeated)
                continue
            }
            author = upload.principal
            let version = versions[upload.partition]!
            do {
                let changes = try await stage(upload.operations, in: upload.partition) { changes, transaction in
                    try await validate?(changes, transaction)
                }
                if let requestId = upload.requestId { recordOutcome(["version": .int(version)], of: upload, requestId: requestId) }
                steps.append(.applied(version: version, changes: changes))
            } catch let error as SyncError where error.isRefusal {
                if let requestId = upload.requestId {
                    recordOutcome(ObjectStore.refusal(error), of: upload, requestId: requestId)
                }
                steps.append(.refused(error))
            }
        }
        return steps
    }
}
