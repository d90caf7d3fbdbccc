import SyncProtocol

/// A mongodump `<collection>.metadata.json`: the collection's name, UUID, options and
/// indexes, as canonical Extended JSON.
public struct DumpMetadata: Sendable, Hashable {
    public struct Index: Sendable, Hashable {
        public var name: String
        /// The indexed fields and their directions or kinds (`1`, `-1`, `"text"`, …), in order.
        public var key: BSONDocument
        public var unique: Bool
        /// The whole specification (`partialFilterExpression`, `expireAfterSeconds`, …).
        public var specification: BSONDocument
    }

    /// The whole document.
    public var document: BSONDocument
    public var collectionName: String?
    /// `collection`, `view` or `timeseries` (older mongodump versions leave it out).
    public var type: String?
    public var uuid: String?
    public var options: BSONDocument
    public var indexes: [Index]

    /// Reads and decodes the metadata file at `path` (gzip or not).
    public init(path: String) throws(ImportError) {
        var reader = try MongoExportReader(path: path)
        guard let first = try reader.next() else {
            throw ImportError(.malformedJSON, "holds no metadata document", file: path)
        }
        guard try reader.next() == nil else {
            throw ImportError(.malformedJSON, "holds more than one metadata document", file: path)
        }
        try self.init(document: first.document, file: path)
    }

    public init(document: BSONDocument, file: String? = nil) throws(ImportError) {
        self.document = document
        if case .string(let name)? = document["collectionName"] { collectionName = name }
        if case .string(let type)? = document["type"] { self.type = type }
        if case .string(let uuid)? = document["uuid"] { self.uuid = uuid }
        if case .document(let options)? = document["options"] { self.options = options } else { self.options = [:] }
        var indexes: [Index] = []
        if case .array(let specifications)? = document["indexes"] {
            for (number, value) in specifications.enumerated() {
                guard case .document(let specification) = value, case .string(let name)? = specification["name"],
                    case .document(let key)? = specification["key"]
                else {
                    throw ImportError(
                        .malformedJSON, "index \(number + 1) has no \"name\" and \"key\"",
                        path: FieldPath([.field("indexes"), .index(number)]), file: file)
                }
                let unique: Bool = if case .bool(true)? = specification["unique"] { true } else { false }
                indexes.append(Index(name: name, key: key, unique: unique, specification: specification))
            }
        }
        self.indexes = indexes
    }
}
