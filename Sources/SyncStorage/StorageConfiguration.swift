import SyncProtocol

/// Settings of the storage engine.
public struct StorageConfiguration: Sendable, Hashable {
    /// Body size, JSON depth and operations per upload. Defaults: 1 MiB, 32, 1,000.
    public var limits: Limits
    /// Objects per change batch when the reader asks for no particular size. Default 500.
    public var defaultPageSize: Int
    /// The largest change batch a reader may ask for. Default 5,000.
    public var maximumPageSize: Int
    /// How often a transaction that lost a deadlock or serialization conflict is retried. Default 5.
    public var transactionRetries: Int

    public init(
        limits: Limits = Limits(), defaultPageSize: Int = 500, maximumPageSize: Int = 5_000, transactionRetries: Int = 5
    ) {
        self.limits = limits
        self.defaultPageSize = defaultPageSize
        self.maximumPageSize = maximumPageSize
        self.transactionRetries = transactionRetries
    }
}
