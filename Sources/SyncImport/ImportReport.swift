import SyncProtocol

/// What an import did (or, in a dry run, would do): counts per collection and per partition,
/// the conversions made, and the refusals, each with its stable code, document and field. Its
/// size is bounded whatever the export's: partitions past ``partitionLimit`` are counted
/// together, and refusals past ``refusalLimit`` are counted, not listed (each one is still
/// printed as it happens). Pure.
public struct ImportReport: Sendable, Hashable {
    /// Counts of documents by outcome.
    public struct Counts: Sendable, Hashable {
        public var read = 0
        /// Written (absent before).
        public var imported = 0
        /// Stored already with the same body: nothing written.
        public var unchanged = 0
        public var refused = 0

        public init() {}

        var json: JSONValue {
            ["read": .int(Int64(read)), "imported": .int(Int64(imported)), "unchanged": .int(Int64(unchanged)), "refused": .int(Int64(refused))]
        }
    }

    /// What happened to one document.
    public enum Outcome: Sendable, Hashable {
        case imported
        case unchanged
        case refused(Refusal)
    }

    /// A document (or user) that was not imported, and why.
    public struct Refusal: Sendable, Hashable, CustomStringConvertible {
        /// Stable: an ``ImportError/Kind`` of the reading and mapping (`unsupportedValue`,
        /// `invalidPartition` …), or a ``SyncError/Code`` of the server (`validation_failed`,
        /// `exists`, `document_too_large` …).
        public var code: String
        public var message: String
        public var file: String?
        public var documentNumber: Int?
        public var line: Int?
        public var documentID: String?
        public var field: String?
        public var collection: String?

        public init(
            code: String, message: String, file: String? = nil, documentNumber: Int? = nil, line: Int? = nil,
            documentID: String? = nil, field: String? = nil, collection: String? = nil
        ) {
            self.code = code
            self.message = message
            self.file = file
            self.documentNumber = documentNumber
            self.line = line
            self.documentID = documentID
            self.field = field
            self.collection = collection
        }

        /// The refusal of a document the readers or the mapping refused.
        public init(_ error: ImportError, collection: String?) {
            self.init(
                code: error.kind.rawValue, message: error.message, file: error.file, documentNumber: error.documentNumber,
                line: error.line, documentID: error.documentID, field: error.path.flatMap { $0.isRoot ? nil : $0.description },
                collection: collection)
        }

        /// `refused [validation_failed] User.json: document 3 (_id "u-1"): field text: …`
        public var description: String {
            var place: [String] = []
            if let file { place.append(file) }
            var document = documentNumber.map { "document \($0)" } ?? ""
            if let line { document += (document.isEmpty ? "" : " ") + "(line \(line))" }
            if let documentID { document += (document.isEmpty ? "" : " ") + "(_id \(documentID))" }
            if !document.isEmpty { place.append(document) }
            if let field { place.append("field \(field)") }
            return "refused [\(code)] " + (place + [message]).joined(separator: ": ")
        }

        var json: JSONValue {
            var fields: [String: JSONValue] = ["code": .string(code), "message": .string(message)]
            if let file { fields["file"] = .string(file) }
            if let documentNumber { fields["document"] = .int(Int64(documentNumber)) }
            if let line { fields["line"] = .int(Int64(line)) }
            if let documentID { fields["_id"] = .string(documentID) }
            if let field { fields["field"] = .string(field) }
            if let collection { fields["collection"] = .string(collection) }
            return .object(fields)
        }
    }

    public var dryRun: Bool
    public private(set) var total = Counts()
    public private(set) var collections: [String: Counts] = [:]
    public private(set) var partitions: [String: Counts] = [:]
    /// Documents of partitions past ``partitionLimit``, together.
    public private(set) var otherPartitions = Counts()
    public private(set) var users = Counts()
    public var conversions = ConversionTally()
    /// Binary fields stored as blobs, and their bytes (each blob counted where it is cited).
    public var blobs = 0
    public var blobBytes: Int64 = 0
    /// Binary fields written as base64 text.
    public var base64Fields = 0
    public private(set) var refusals: [Refusal] = []
    /// Refusals not listed (past ``refusalLimit``).
    public private(set) var refusalsNotListed = 0
    /// A failure that ended the import early (a file cut short, the database gone), if any.
    public var failure: String?
    public let partitionLimit: Int
    public let refusalLimit: Int

    public init(dryRun: Bool = false, partitionLimit: Int = 1_000, refusalLimit: Int = 10_000) {
        self.dryRun = dryRun
        self.partitionLimit = partitionLimit
        self.refusalLimit = refusalLimit
    }

    /// Counts one document of `collection` (and of `partition`, when it was placed), or
    /// `count` documents with the same outcome (a refusal is one document's: give 1).
    public mutating func record(_ outcome: Outcome, collection: String, partition: String?, count: Int = 1) {
        func apply(_ counts: inout Counts) {
            counts.read += count
            switch outcome {
            case .imported: counts.imported += count
            case .unchanged: counts.unchanged += count
            case .refused: counts.refused += count
            }
        }
        apply(&total)
        apply(&collections[collection, default: Counts()])
        if let partition {
            if partitions[partition] != nil || partitions.count < partitionLimit {
                apply(&partitions[partition, default: Counts()])
            } else {
                apply(&otherPartitions)
            }
        }
        if case .refused(let refusal) = outcome { list(refusal) }
    }

    /// Counts one user of a users export.
    public mutating func recordUser(_ outcome: Outcome) {
        users.read += 1
        switch outcome {
        case .imported: users.imported += 1
        case .unchanged: users.unchanged += 1
        case .refused(let refusal):
            users.refused += 1
            list(refusal)
        }
    }

    private mutating func list(_ refusal: Refusal) {
        if refusals.count < refusalLimit { refusals.append(refusal) } else { refusalsNotListed += 1 }
    }

    /// The report as JSON (`--report-json`).
    public var json: JSONValue {
        var fields: [String: JSONValue] = [
            "dryRun": .bool(dryRun),
            "total": total.json,
            "collections": .object(collections.mapValues(\.json)),
            "partitions": .object(partitions.mapValues(\.json)),
            "users": users.json,
            "conversions": .object(conversions.counts.mapValues { .int(Int64($0)) }),
            "binary": ["blobs": .int(Int64(blobs)), "blobBytes": .int(blobBytes), "base64": .int(Int64(base64Fields))],
            "refusals": .array(refusals.map(\.json)),
            "refusalsNotListed": .int(Int64(refusalsNotListed)),
        ]
        if otherPartitions.read > 0 { fields["otherPartitions"] = otherPartitions.json }
        if let failure { fields["failure"] = .string(failure) }
        return .object(fields)
    }

    /// The report as text, for the terminal.
    public var lines: [String] {
        func counts(_ c: Counts) -> String {
            "\(c.read) read, \(c.imported) imported, \(c.unchanged) unchanged, \(c.refused) refused"
        }
        var lines = [(dryRun ? "Dry run (nothing written): " : "Import: ") + counts(total)]
        for (name, c) in collections.sorted(by: { $0.key < $1.key }) { lines.append("  collection \(name): \(counts(c))") }
        let shown = partitions.sorted { $0.key < $1.key }
        for (name, c) in shown.prefix(20) { lines.append("  partition \(name): \(counts(c))") }
        if shown.count > 20 || otherPartitions.read > 0 {
            lines.append("  … \(partitions.count - min(shown.count, 20)) more partitions\(otherPartitions.read > 0 ? " and \(otherPartitions.read) documents of others" : "") (see --report-json)")
        }
        if users.read > 0 { lines.append("  users: \(counts(users))") }
        if !conversions.counts.isEmpty {
            lines.append("  conversions: " + conversions.counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        }
        if blobs > 0 || base64Fields > 0 {
            lines.append("  binary: \(blobs) blobs (\(blobBytes) bytes), \(base64Fields) base64")
        }
        if total.refused + users.refused > 0 {
            lines.append("  refusals: \(total.refused + users.refused) (each printed above\(refusalsNotListed > 0 ? "; \(refusalsNotListed) not in the JSON report" : ""))")
        }
        if let failure { lines.append("  stopped: \(failure)") }
        return lines
    }
}
