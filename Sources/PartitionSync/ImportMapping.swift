import SyncProtocol

/// How `psync import` (docs/MIGRATING.md) brings an application's MongoDB documents in,
/// beyond what its options say: which binary fields become blobs and which stay inline as
/// base64 text, whether the partition field stays in the body, and a last look at each
/// document before it is written.
///
/// ```swift
/// let mapping = ImportMapping(
///     binaryFields: [
///         .init("userPreferences.avatarImage.picture", as: .blob(contentType: "image/jpeg")),
///         .init("*.thumbNail", as: .base64),
///     ],
///     document: { document in
///         if document.collection == "Task" { document.body["status"] = document.body["status"] ?? "Open" }
///     })
/// ```
public struct ImportMapping: Sendable {
    /// What binary data of a field becomes.
    public enum BinaryTreatment: Sendable, Hashable {
        /// Stored as a blob (docs/PROTOCOL.md, "Blobs"), the field replaced by its reference.
        case blob(contentType: String)
        /// Standard base64 text in the body (what a model's `Data` field decodes).
        case base64
    }

    /// Which binary fields get which treatment: the first rule that matches decides.
    public struct BinaryField: Sendable, Hashable {
        /// The collection; `nil`: every collection.
        public var collection: String?
        /// Dot-separated field names from the top of the document, array indices left out,
        /// `*` for any one name: `"image.picture"` matches `image.picture` and
        /// `images[3].picture`.
        public var path: String
        public var treatment: BinaryTreatment

        public init(_ path: String, in collection: String? = nil, as treatment: BinaryTreatment) {
            self.path = path
            self.collection = collection
            self.treatment = treatment
        }
    }

    /// A document about to be written, which ``document`` may change.
    public struct Document: Sendable, Hashable {
        public var collection: String
        /// The object id (the source's `_id`, as text).
        public var id: String
        public var partition: Partition
        /// The body as it will be stored (`_id` and `partition` are set by the engine).
        public var body: [String: JSONValue]

        public init(collection: String, id: String, partition: Partition, body: [String: JSONValue]) {
            self.collection = collection
            self.id = id
            self.partition = partition
            self.body = body
        }
    }

    /// The binary fields' treatments; a binary field no rule names is written as base64 text.
    public var binaryFields: [BinaryField]
    /// Whether the source's partition field stays in the body when it is not `partition`
    /// (which the engine always sets). Default: it is removed (`--keep-partition-field`
    /// keeps it).
    public var keepsPartitionField: Bool
    /// Called for each document after the mapping of its values and before the validators:
    /// may change its body, id, collection or partition, or throw to refuse it (the error's
    /// text is reported with the document).
    public var document: (@Sendable (inout Document) throws -> Void)?

    public init(
        binaryFields: [BinaryField] = [], keepsPartitionField: Bool = false,
        document: (@Sendable (inout Document) throws -> Void)? = nil
    ) {
        self.binaryFields = binaryFields
        self.keepsPartitionField = keepsPartitionField
        self.document = document
    }
}
