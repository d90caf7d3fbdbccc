import SyncProtocol

/// Settings of the storage engine.
package struct StorageConfiguration: Sendable, Hashable {
    /// Body size, JSON depth and operations per upload. Defaults: 1 MiB, 32, 1,000.
    package var limits: Limits
    /// Objects per change batch when the reader asks for no particular size. Default 500.
    package var defaultPageSize: Int
    /// The largest change batch a reader may ask for. Default 5,000.
    package var maximumPageSize: Int
    /// How often a transaction that lost a deadlock or serialization conflict is retried. Default 5.
    package var transactionRetries: Int
    /// Bytes of objects (bodies, collections and ids) in one change page: a page ends before
    /// the object that would pass it, whatever its count, except that an object larger than
    /// this goes alone in its page. Default 4 MiB.
    package var maximumPageBytes: Int
    /// How long an upload waits for the lock of its partition while another transaction holds
    /// it, at each of its (at most three) attempts, before it is answered `unavailable` (the
    /// client sends it again later). A lock held for long elsewhere then holds up only its
    /// own partition's uploads, not the few upload transactions every partition shares.
    /// Default 2 seconds.
    package var lockPatience: Duration
    /// Bytes of objects and events written by one statement: a transaction's writes go to the
    /// database in statements of about this size (an object or event larger than this goes
    /// alone). postgres-nio keeps a connection's send buffer at the largest size it ever had,
    /// so a connection that carried a statement of more than four times this is closed when
    /// its transaction ends, and the pool opens another. Default 1 MiB.
    package var statementBytes: Int
    /// How many raised counters (``ObjectCounter``) an object keeps beside its body: a raise
    /// that would keep more writes the body whole, with every counter laid in, and starts
    /// again from none. Every read of the object lays the kept ones into its body, so more
    /// makes reads of a large object cost more and its body rewritten less often. 0 writes
    /// every raise into the body. Default 32.
    package var countersPerObject: Int

    package init(
        limits: Limits = Limits(), defaultPageSize: Int = 500, maximumPageSize: Int = 5_000, transactionRetries: Int = 5,
        maximumPageBytes: Int = 4 << 20, lockPatience: Duration = .seconds(2),
        statementBytes: Int = 1 << 20, countersPerObject: Int = 32
    ) {
        self.countersPerObject = countersPerObject
        self.lockPatience = lockPatience
        self.statementBytes = statementBytes
        self.limits = limits
        self.defaultPageSize = defaultPageSize
        self.maximumPageSize = maximumPageSize
        self.transactionRetries = transactionRetries
        self.maximumPageBytes = maximumPageBytes
    }
}
