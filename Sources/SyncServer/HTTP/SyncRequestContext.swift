import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import PartitionSync

/// The request context of the server's HTTP and WebSocket routes: Hummingbird's core
/// storage, WebSocket upgrade support, and the client's address (for login rate limits).
package struct SyncRequestContext: RequestContext, WebSocketRequestContext {
    package var coreContext: CoreRequestContextStorage
    /// Held through a slot the session empties once upgraded (see ``WebSocketHandlerSlot``).
    package var webSocket: WebSocketHandlerReference<Self> { webSocketSlot.handlerReference }
    let webSocketSlot = WebSocketHandlerSlot()
    /// The peer's IP address, or `unknown`.
    package let remoteAddress: String
    /// The connection, to answer a refused WebSocket upgrade (``UpgradeRefusals``) and to gate
    /// its frames (``FrameGates``). Weak, so that nothing that outlives the connection and
    /// holds the request context keeps the closed connection's socket channel and buffers.
    weak var channel: (any Channel)?

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
        channel = source.channel
    }

    /// Room for the largest upload: 1,000 operations of 1 MiB bodies is more than anyone
    /// should send over HTTP; the engine's own limits refuse what is too large.
    package var maxUploadSize: Int { 16 << 20 }
}
