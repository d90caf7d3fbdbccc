import Foundation
import SyncProtocol

/// A write kept on this device only: saved in the store and shown in this app's view of its
/// partition (on top of the server's objects and the pending writes), surviving restarts,
/// never uploaded, until it is published as one ordinary write or discarded.
public struct Draft: Sendable, Hashable, Identifiable {
    /// Chosen by the app (a page's id, say) or made up when it saves the draft.
    public var id: String
    public var partition: Partition
    public var operations: [SyncOperation]
    /// When it was last saved.
    public var savedAt: Date
}
