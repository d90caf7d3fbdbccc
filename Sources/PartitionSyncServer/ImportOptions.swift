import SyncImport

/// What `import` was asked to do (docs/MIGRATING.md, "Importing"): every choice and limit of
/// an import, with the defaults of the command's options.
package struct ImportOptions: Sendable {
    /// Export files, or folders holding them (searched to any depth).
    package var paths: [String]
    /// The collection of every file, instead of the one its name gives.
    package var collection: String?
    package var placement = DocumentPlacement()
    /// Skips the application's validators and declared schemas (never the storage limits).
    package var trusted = false
    /// Records the imported objects and accounts as `import` events for triggers.
    package var triggers = true
    /// Writes nothing: every batch is applied and validated in a transaction that is rolled back.
    package var dryRun = false
    /// Documents per transaction.
    package var batchDocuments = 500
    /// Bytes of source documents (their blobs included) per transaction: a batch ends before
    /// the document that would pass it.
    package var batchBytes = 8 << 20
    /// Documents read ahead and held by partition, so that each transaction writes to few
    /// partitions (``PartitionWindow``); `nil`: 20 batches' worth. At most `batchDocuments`:
    /// batches in file order.
    package var windowDocuments: Int?
    /// Bytes of source documents (their blobs included) held by partition; `nil`: 4 batches' worth.
    package var windowBytes: Int?
    /// Batches written at the same time, each its own transaction.
    package var writers = 2
    /// The service name the import writes as (`service:<name>`): what the validators see.
    package var principal = "import"
    /// An App Services users export (a JSON array, as the Admin API lists users).
    package var usersFile: String?
    /// Whether imported emails count as verified (the operator vouches for them).
    package var emailsVerified = false
    /// Gives imported accounts that have no password yet a new token (the old one stops working).
    package var reissueTokens = false
    /// How long a password-set token lives.
    package var tokenLifetime: Duration = .seconds(30 * 86_400)
    /// The largest binary field stored as a blob, in bytes.
    package var blobMaximumBytes: Int64 = 32 << 20
    /// The shortest time between two progress outputs; `nil`: 5 s for lines, 0.2 s for a bar.
    package var progressInterval: Duration?
    /// Partitions counted one by one in the report; the others together.
    package var reportPartitions = 1_000
    /// Refusals listed in the JSON report; the others counted (all are printed).
    package var reportRefusals = 10_000

    /// The documents held by partition before a batch is written.
    package var windowDocumentLimit: Int { max(batchDocuments, windowDocuments ?? 20 * batchDocuments) }
    /// The bytes held by partition before a batch is written.
    package var windowByteLimit: Int { max(batchBytes, windowBytes ?? 4 * batchBytes) }

    package init(paths: [String]) {
        self.paths = paths
    }
}
