import Hummingbird
import Logging
import NIOCore
import PartitionSync

/// The request context of the server's HTTP routes: Hummingbird's core storage and the
/// client's address (for login rate limits).
package struct SyncRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    /// The peer's IP address, or `unknown`.
    package let remoteAddress: String

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress?.ipAddress ?? "unknown"
    }

    /// Room for the largest upload: 1,000 operations of 1 MiB bodies is more than anyone
    /// should send over HTTP; the engine's own limits refuse what is too large.
    package var maxUploadSize: Int { 16 << 20 }
}
