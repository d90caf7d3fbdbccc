import SyncProtocol

/// Decides what becomes of each upload of a batch, in order, on the states of a transaction's
/// record: applied (staged on top of the uploads before it, its outcome queued), refused (its
/// refusal queued, nothing of it staged), or repeated (its request id was answered before the
/// batch, or earlier in it). A pure state machine, like ``FrameHeaderScanner``: decisions are
/// values, never thrown. The I/O between decisions — the blob check and the application's
/// validator, which may read through the transaction — is its caller's: ``next(_:)`` says what
/// to check, ``checked(_:_:)`` takes the answer.
///
/// Every object the uploads touch must be in the record's ``WriteRecord/known`` (read after
/// the partitions' locks); an object missing there is taken as not stored.
struct UploadPlanner {
    enum Action: Equatable {
        /// Upload `index` computes to `changes`, which the record's view of the objects now
        /// shows (its validator reads them): check them, then call ``checked(_:_:)``.
        case check(index: Int, changes: [ObjectChange])
        /// Every upload is decided: one step each.
        case done([UploadStep])
    }

    let uploads: [Upload]
    let limits: Limits
    /// Request ids answered: stored before the batch, or by an upload earlier in it.
    private var answered: Set<RequestKey>
    private(set) var steps: [UploadStep] = []
    /// The upload being checked: its changes, and what the record knew of their objects before.
    private var checking: (changes: [ObjectChange], before: [(ObjectKey, (partition: String, state: DocumentState)??)])?

    init(uploads: [Upload], answered: Set<RequestKey> = [], limits: Limits) {
        self.uploads = uploads
        self.answered = answered
        self.limits = limits
    }

    /// Decides the uploads that need no check, up to the next one that does, or the end.
    mutating func next(_ record: inout WriteRecord) -> Action {
        precondition(checking == nil, "the upload being checked is not decided yet")
        while steps.count < uploads.count {
            let upload = uploads[steps.count]
            do throws(SyncError) {
                try ObjectStore.checkRequestID(upload.requestId)
            } catch {
                // No outcome can be stored under an invalid request id.
                steps.append(.refused(error))
                continue
            }
            if let key = upload.requestKey, !answered.insert(key).inserted {
                steps.append(.repeated)
                continue
            }
            record.author = upload.principal
            let changes: [ObjectChange]
            do throws(SyncError) {
                try limits.check(operationCount: upload.operations.count)
                changes = try record.changes(of: upload.operations, in: upload.partition, limits: limits)
            } catch {
                refuse(upload, error, &record)
                continue
            }
            // The checks read the upload's own changes (a room made in the upload is there for
            // the check of a message put into it); a refusal puts the view back as it was.
            let before = changes.map { ($0.key, record.known[$0.key]) }
            for change in changes { record.known[change.key] = (upload.partition.description, change.after) }
            checking = (changes, before)
            return .check(index: steps.count, changes: changes)
        }
        return .done(steps)
    }

    /// Takes the answer of the check ``next(_:)`` asked for: `nil` accepts the upload, a
    /// refusal refuses it.
    mutating func checked(_ refusal: SyncError?, _ record: inout WriteRecord) {
        guard let (changes, before) = checking else { preconditionFailure("no upload is being checked") }
        checking = nil
        let upload = uploads[steps.count]
        if let refusal {
            for (key, entry) in before { record.known[key] = entry }
            refuse(upload, refusal, &record)
            return
        }
        record.stage(changes, in: upload.partition)
        let version = record.versions[upload.partition]!
        if let requestId = upload.requestId {
            record.outcomes.append((upload, requestId, ["version": .int(version)]))
        }
        steps.append(.applied(version: version, timeline: record.timeline, changes: changes))
    }

    private mutating func refuse(_ upload: Upload, _ error: SyncError, _ record: inout WriteRecord) {
        if let requestId = upload.requestId {
            record.outcomes.append((upload, requestId, ObjectStore.refusal(error)))
        }
        steps.append(.refused(error))
    }
}
