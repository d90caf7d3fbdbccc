/// Limits and housekeeping of blobs (docs/PROTOCOL.md, "Blobs").
package struct BlobConfiguration: Sendable, Hashable {
    /// The largest blob, in bytes. Default 32 MiB.
    package var maximumBytes: Int64 = 32 << 20
    /// The bytes of blobs one principal may have stored (blobs they uploaded first). Default 1 GiB.
    package var quotaBytes: Int64 = 1 << 30
    /// How long a blob no object references is kept after its upload, so the write that
    /// references it can follow. Default 1 hour.
    package var unreferencedGrace: Duration = .seconds(3600)
    /// How often the collector looks for blobs to delete. Default 10 minutes.
    package var collectInterval: Duration = .seconds(600)
    /// Bytes per chunk of the default content store (not a limit; read at every start).
    /// Default 256 KiB.
    package var chunkBytes: Int = 256 << 10

    package init() {}
}

/// How objects expire (docs/PROTOCOL.md, "Expiry").
package struct ExpiryConfiguration: Sendable, Hashable {
    /// How often the server looks for objects whose time has come. Default 250 ms: an object
    /// is deleted within about that much of its `@expiresAt`.
    package var interval: Duration = .milliseconds(250)
    /// Objects deleted per transaction (as many transactions follow as needed). Default 1,000.
    package var batchSize: Int = 1_000

    package init() {}
}
