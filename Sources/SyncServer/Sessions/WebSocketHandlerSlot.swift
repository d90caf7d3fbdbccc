import HummingbirdWebSocket
import Locking
import Synchronization

/// Where a request context keeps its WebSocket handler reference, so that the session can let
/// go of it once the upgrade is done.
///
/// HummingbirdWebSocket's router stores the upgrade's handler, together with a copy of the
/// request context, in the box the context's `webSocket` refers to: the box holds the context,
/// the context holds the box. Nothing breaks that cycle, so every upgraded connection would
/// keep its request context (its logger and metadata, about 0.8 KB) for the life of the
/// process. The session empties the slot as it starts (``release()``); by then the upgrade has
/// read the handler, and the box goes when the connection does.
final class WebSocketHandlerSlot: Sendable {
    private let reference = Locked<WebSocketHandlerReference<SyncRequestContext>?>(.init())

    private static let live = Atomic<Int>(0)
    /// Slots not yet freed, for the test that checks they are.
    static var liveCount: Int { live.load(ordering: .relaxed) }

    init() { Self.live.add(1, ordering: .relaxed) }
    deinit { Self.live.subtract(1, ordering: .relaxed) }

    /// The reference while the upgrade needs it; after ``release()``, an empty one.
    var handlerReference: WebSocketHandlerReference<SyncRequestContext> {
        reference.withLock { $0 } ?? .init()
    }

    /// Lets go of the reference (and so of the cycle through it).
    func release() {
        reference.withLock { $0 = nil }
    }
}
