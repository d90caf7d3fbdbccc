import Foundation
import Logging

/// Settings of a ``SyncClient``. Every field but the server has a default.
public struct SyncClientConfiguration: Sendable {
    /// The server's base URL, e.g. `http://127.0.0.1:8080`.
    public var serverURL: URL
    /// The SQLite file of the local store; `nil` keeps it in memory (nothing survives a restart).
    public var storePath: String?
    /// How often to ping the server while connected. Default 20 seconds (the server closes
    /// sessions silent for 60).
    public var pingInterval: Duration = .seconds(20)
    /// How long after a ping the client waits for any message from the server before it takes
    /// the connection for dead, drops it and reconnects. Default 10 seconds.
    public var pongTimeout: Duration = .seconds(10)
    /// The first wait before reconnecting; doubled per failed attempt, with jitter. Default 250 ms.
    public var reconnectDelay: Duration = .milliseconds(250)
    /// The longest wait before reconnecting. Default 30 seconds.
    public var maximumReconnectDelay: Duration = .seconds(30)
    /// How long an upload may wait for its answer before the connection is considered dead.
    /// Default 30 seconds.
    public var uploadTimeout: Duration = .seconds(30)
    /// The largest upload message the server takes (its `maximumMessageBytes`): a write whose
    /// upload would be longer is refused at once with `payload_too_large`, never queued, so it
    /// cannot become an upload the server refuses on every reconnect. Default 16 MiB.
    public var maximumUploadBytes: Int = 16 << 20
    /// The largest blob the server takes (its `--blob-max-bytes`): a larger one is refused at
    /// once by ``SyncClient/attach(_:contentType:)``. Default 32 MiB.
    public var maximumBlobBytes: Int = 32 << 20
    /// Bytes of downloaded blobs kept locally, least recently used out first (attached blobs
    /// not yet uploaded do not count and are never removed). Default 100 MiB.
    public var blobCacheBytes: Int64 = 100 << 20
    /// How often a running client looks whether another process sharing its store committed
    /// something (a queued write, a page), to show it and upload it.
    public var otherProcessesInterval: Duration = .milliseconds(250)
    /// Whether the connection makes its user present (the server's presence events, RChat's
    /// On-Line): `false` for a client that connects for one command and exits, so that its
    /// user does not flap between present and absent (`?presence=off`, docs/PROTOCOL.md).
    public var countsInPresence = true
    public var logger: Logger

    public init(serverURL: URL, storePath: String?, logger: Logger = Logger(label: "psync.client")) {
        self.serverURL = serverURL
        self.storePath = storePath
        self.logger = logger
    }

    var webSocketURL: String {
        var components = URLComponents(url: serverURL, resolvingAgainstBaseURL: false)!
        components.scheme = components.scheme == "https" ? "wss" : "ws"
        components.path = (components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path) + "/v1/sync"
        if !countsInPresence { components.queryItems = [URLQueryItem(name: "presence", value: "off")] }
        return components.string!
    }
}
