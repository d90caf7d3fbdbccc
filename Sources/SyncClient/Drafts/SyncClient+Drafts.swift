import Foundation
import SyncProtocol

/// Drafts: writes kept on this device until the app publishes or discards them (``Draft``).
///
/// ```swift
/// let draft = try await client.saveDraft([.put(pageKey, body: ["markdown": "# Hello"])], in: wiki, id: "home")
/// // … the app shows it, the user edits it (saved again under the same id), then:
/// try await client.publishDraft(draft.id)     // uploaded as one ordinary write
/// ```
extension SyncClient {
    /// Saves operations as a draft of `partition`, replacing the draft with the same `id`
    /// (without an id, a new draft). It is checked as a write would be, shown at once in the
    /// partition's objects, and never uploaded.
    @discardableResult
    public func saveDraft(_ operations: [SyncOperation], in partition: Partition, id: String? = nil) throws -> Draft {
        try check(operations, in: partition)
        let draft = Draft(id: id ?? UUID().uuidString.lowercased(), partition: partition, operations: operations, savedAt: Date())
        try store.saveDraft(draft)
        publish(partition)
        return draft
    }

    /// The drafts of a partition (of all partitions without one), oldest first.
    public func drafts(in partition: Partition? = nil) throws -> [Draft] {
        try store.drafts(in: partition)
    }

    /// Uploads a draft as one ordinary write (checked again against the copy as it is now)
    /// and forgets the draft; returns the upload's request id.
    @discardableResult
    public func publishDraft(_ id: String) throws -> String {
        guard let draft = try store.draft(id) else { throw SyncError(.notFound, "no draft \(id)") }
        try check(draft.operations, in: draft.partition)
        guard let requestId = try store.publishDraft(id) else { throw SyncError(.notFound, "no draft \(id)") }
        publish(draft.partition)
        wakeUploader()
        stateChanged()
        return requestId
    }

    /// Forgets a draft; the partition's objects show the server's state again.
    public func discardDraft(_ id: String) throws {
        guard let draft = try store.draft(id) else { return }
        try store.removeDraft(id)
        publish(draft.partition)
    }
}
