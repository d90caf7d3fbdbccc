import ArgumentParser
import Foundation
import Logging
import PartitionSync
import SyncImport
import SyncProtocol
import SyncStorage

/// `psync import PATH…`: brings a Realm app's MongoDB data (mongoexport or mongodump files)
/// and App Services users into this application's database (docs/MIGRATING.md).
struct Import: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Import MongoDB exports (mongoexport .json, mongodump .bson, gzip'd or not) and App Services users.",
        discussion: """
            Each file's collection is its name (User.json, User.bson.gz → User). Documents go through the \
            application's validators unless --trusted; objects stored already are kept, so running the same \
            import again, or after an interruption, stores every document once. See docs/MIGRATING.md.
            """)

    @OptionGroup var database: DatabaseOptions

    @Argument(help: "Export files, or folders holding them (searched to any depth).")
    var paths: [String] = []

    @Option(help: "The collection of every file given, instead of the one its name gives.")
    var collection: String?

    @Option(name: .customLong("partition-field"), help: "The field holding the partition (default: _partition, or partition when only that one is present).")
    var partitionField: String?

    @Option(name: .customLong("partition-key"), help: "The key given to partition values without one ('5f…' → '<key>=5f…').")
    var partitionKey: String?

    @Flag(name: .customLong("keep-partition-field"), help: "Keep the partition field in the body (it is removed by default; 'partition' is always set by the server).")
    var keepPartitionField = false

    @Flag(help: "Skip the application's validators and declared schemas (never the storage limits).")
    var trusted = false

    @Flag(name: .customLong("no-triggers"), help: "Record no events: triggers never see the imported objects and accounts.")
    var noTriggers = false

    @Flag(name: .customLong("dry-run"), help: "Write nothing: report what would be imported and every refusal.")
    var dryRun = false

    @Option(name: .customLong("batch-documents"), help: "Documents per transaction (env PSYNC_IMPORT_BATCH_DOCUMENTS).")
    var batchDocuments: Int = EnvironmentDefault.value("PSYNC_IMPORT_BATCH_DOCUMENTS", default: 500)

    @Option(name: .customLong("batch-bytes"), help: "Bytes of source documents per transaction (env PSYNC_IMPORT_BATCH_BYTES).")
    var batchBytes: Int = EnvironmentDefault.value("PSYNC_IMPORT_BATCH_BYTES", default: 8 << 20)

    @Option(name: .customLong("window-documents"), help: "Documents read ahead and grouped by partition, so each transaction writes to few partitions (default: 20 batches; the batch size: file order; env PSYNC_IMPORT_WINDOW_DOCUMENTS).")
    var windowDocuments: Int?

    @Option(name: .customLong("window-bytes"), help: "Bytes of source documents read ahead (default: 4 batches; env PSYNC_IMPORT_WINDOW_BYTES).")
    var windowBytes: Int?

    @Option(help: "Batches written at the same time, each its own transaction (env PSYNC_IMPORT_WRITERS).")
    var writers: Int = EnvironmentDefault.value("PSYNC_IMPORT_WRITERS", default: 2)

    @Option(name: .customLong("blob-max-bytes"), help: "Largest binary field stored as a blob (env PSYNC_BLOB_MAX_BYTES).")
    var blobMaxBytes: Int64 = EnvironmentDefault.value("PSYNC_BLOB_MAX_BYTES", default: 32 << 20)

    @Option(help: "The service name the import writes as (service:<name>): what the validators see.")
    var principal = "import"

    @Option(help: "An App Services users export (JSON array): accounts keeping their ids, each with a one-time password-set token.")
    var users: String?

    @Option(name: .customLong("tokens-file"), help: "Write the password-set tokens there (mode 0600, appended) instead of standard output.")
    var tokensFile: String?

    @Option(name: .customLong("token-ttl"), help: "Seconds a password-set token stays valid.")
    var tokenTTL: Int = 30 * 86_400

    @Flag(name: .customLong("emails-verified"), help: "Imported emails count as verified (App Services confirmed them); default: unverified until the owner verifies.")
    var emailsVerified = false

    @Flag(name: .customLong("reissue-tokens"), help: "Give imported accounts that have no password yet a new token.")
    var reissueTokens = false

    @Option(name: .customLong("progress-interval"), help: "Seconds between progress outputs (default: 5 for lines, 0.2 for the bar on a terminal).")
    var progressInterval: Double?

    @Option(name: .customLong("report-json"), help: "Write the final report there as JSON.")
    var reportJSON: String?

    @Option(name: .customLong("report-partitions"), help: "Partitions counted one by one in the report; the others together.")
    var reportPartitions = 1_000

    @Option(name: .customLong("report-refusals"), help: "Refusals listed in the JSON report (all are printed).")
    var reportRefusals = 10_000

    func validate() throws {
        guard !paths.isEmpty || users != nil else { throw ValidationError("give export files or folders, or --users") }
        guard batchDocuments > 0, batchBytes > 0 else { throw ValidationError("batch sizes are positive") }
        guard writers > 0 else { throw ValidationError("--writers is positive") }
        guard (window.documents ?? 1) > 0, (window.bytes ?? 1) > 0 else { throw ValidationError("window sizes are positive") }
        try EnvironmentDefault.check()
    }

    /// The window's sizes: the options, else their environment variables, else the defaults.
    private var window: (documents: Int?, bytes: Int?) {
        (
            windowDocuments ?? EnvironmentDefault.optional("PSYNC_IMPORT_WINDOW_DOCUMENTS", as: Int.self),
            windowBytes ?? EnvironmentDefault.optional("PSYNC_IMPORT_WINDOW_BYTES", as: Int.self)
        )
    }

    var options: ImportOptions {
        var options = ImportOptions(paths: paths)
        options.collection = collection
        options.placement = DocumentPlacement(partitionField: partitionField, partitionKey: partitionKey, keepsPartitionField: keepPartitionField)
        options.trusted = trusted
        options.triggers = !noTriggers
        options.dryRun = dryRun
        options.batchDocuments = batchDocuments
        options.batchBytes = batchBytes
        (options.windowDocuments, options.windowBytes) = (window.documents, window.bytes)
        options.writers = writers
        options.blobMaximumBytes = blobMaxBytes
        options.principal = principal
        options.usersFile = users
        options.tokenLifetime = .seconds(tokenTTL)
        options.emailsVerified = emailsVerified
        options.reissueTokens = reissueTokens
        options.reportPartitions = reportPartitions
        options.reportRefusals = reportRefusals
        options.progressInterval = progressInterval.map { .milliseconds(Int64(max(0, $0) * 1000)) }
        return options
    }

    func run() async throws {
        let logger = Served.commandLogger
        let application = Served.application
        let options = self.options
        let tokens = try TokenSink(path: tokensFile)
        let terminal = isatty(STDERR_FILENO) != 0
        let output = Importer.Output(
            progress: { line in
                Self.write(terminal ? line : line + "\n")
            },
            refusal: { refusal in
                Self.write((terminal ? "\r\u{1B}[K" : "") + refusal.description + "\n")
            },
            token: { userID, email, token in try tokens.write(userID: userID, email: email, token: token) })
        let report = try await database.withMigratedClient(logger: logger) { client in
            let store = ObjectStore(client: client, logger: logger)
            return try await Importer(
                store: store, application: application, options: options, output: output,
                progressStyle: terminal ? .bar(width: 30) : .lines
            ).run()
        }
        if terminal { Self.write("\n") }
        for line in report.lines { print(line) }
        if let reportJSON {
            guard FileManager.default.createFile(atPath: reportJSON, contents: Data(report.json.jsonBytes)) else {
                throw ValidationError("cannot write the report to \(reportJSON)")
            }
        }
        if report.failure != nil { throw ExitCode(2) }
        if report.total.refused + report.users.refused > 0 { throw ExitCode(1) }
    }
}

extension Import {
    /// Writes to standard error; an output closed meanwhile (`| head`) is no reason to stop.
    static func write(_ text: String) {
        try? FileHandle.standardError.write(contentsOf: Data(text.utf8))
    }
}

/// Where the password-set tokens go: standard output, or a file of mode 0600 (appended), one
/// line per account: `<userId>\t<email>\t<token>`, written as soon as the account is made.
/// Unchecked: its one handle is written by the import's one task, a line at a time.
final class TokenSink: @unchecked Sendable {
    private let handle: FileHandle?

    init(path: String?) throws {
        guard let path else {
            handle = nil
            return
        }
        if !FileManager.default.fileExists(atPath: path) {
            guard FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o600]) else {
                throw ValidationError("cannot create the tokens file \(path)")
            }
        }
        guard let handle = FileHandle(forWritingAtPath: path) else { throw ValidationError("cannot write the tokens file \(path)") }
        handle.seekToEndOfFile()
        self.handle = handle
    }

    func write(userID: String, email: String, token: String) throws {
        let line = Data("\(userID)\t\(email)\t\(token)\n".utf8)
        if let handle {
            try handle.write(contentsOf: line)
            try handle.synchronize()
        } else {
            try FileHandle.standardOutput.write(contentsOf: line)
        }
    }
}
