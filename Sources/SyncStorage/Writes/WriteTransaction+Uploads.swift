import SyncProtocol

extension WriteTransaction {
    /// Stages a batch of uploads as the ``UploadPlanner`` decides them, each all-or-nothing on
    /// top of the ones before it, with its outcome queued for the commit; runs the checks it
    /// asks for (blob references, then the upload's validator). An upload whose request id is
    /// in `answered`, or repeats one earlier in the batch, is ``UploadStep/repeated``. Every
    /// partition must be locked first. One step per upload; an error that is no refusal (the
    /// database's, an internal one) is thrown.
    func stage(
        _ batch: [(upload: Upload, validate: ObjectStore.Validator?)], answered: Set<RequestKey> = []
    ) async throws -> [UploadStep] {
        try await stage(batch.map(\.upload), validators: batch.map { entry -> Check? in entry.validate }, answered: answered)
    }

    /// A check of an upload's changes by the application: throwing a refusal refuses them.
    package typealias Check = (_ changes: [ObjectChange], _ transaction: WriteTransaction) async throws -> Void

    /// ``stage(_:answered:)``, with `validators[i]` checking the i-th upload.
    func stage(_ uploads: [Upload], validators: [Check?], answered: Set<RequestKey> = []) async throws -> [UploadStep] {
        // Known already when the partitions were locked with these keys (no round trip then).
        try await readUnknown(uploads.flatMap { $0.operations.map(\.key) })
        var planner = UploadPlanner(uploads: uploads, answered: answered, limits: store.limits)
        while true {
            switch planner.next(&record) {
            case .done(let steps):
                return steps
            case .check(let index, let changes):
                let upload = uploads[index]
                let refusal = try await check(changes, of: upload.operations, in: upload.partition, validate: validators[index])
                planner.checked(refusal, &record)
            }
        }
    }

    /// The checks of changes that need I/O: the blob references they add, then `validate`.
    /// Returns the refusal, if any.
    func check(
        _ changes: [ObjectChange], of operations: [SyncOperation], in partition: Partition,
        validate: Check?
    ) async throws -> SyncError? {
        do {
            try await checkBlobReferences(changes, of: operations, in: partition)
            try await validate?(changes, self)
            return nil
        } catch let error as SyncError where error.isRefusal {
            return error
        }
    }
}
