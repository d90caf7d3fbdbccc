import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore

/// The request context of the server's HTTP and WebSocket routes: Hummingbird's core
/// storage, WebSocket upgrade support, and the client's address (for login rate limits).
public struct SyncRequestContext: RequestContext, WebSocketRequestContext {
    public var coreContext: CoreRequestContextStorage
    public let webSocket: WebSocketHandlerReference<Self>
    /// The peer's IP address, or `unknown`.
    public let remoteAddress: String
    /// The connection, to answer a refused WebSocket upgrade (``UpgradeRefusals``).
    let channel: any Channel

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        webSocket = .init()
        remoteAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
        channel = source.channel
    }

    /// Room for the largest upload: 1,000 operations of 1 MiB bodies is more than anyone
    /// should send over HTTP; the engine's own limits refuse what is too large.
    public var maxUploadSize: Int { 16 << 20 }
}
