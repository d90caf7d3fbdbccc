/// Why a document of an export cannot be imported, and where: the file, the document's number
/// in it (from 1), its `_id` when it is known, and the field.
///
/// The pure decoders fill in the kind, the field path and the message; the file readers add
/// the file, the document number, the `_id` and the byte offset.
public struct ImportError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        /// The file could not be opened or read.
        case io
        /// A `.gz` file that is not valid gzip, or ends before its end.
        case gzip
        /// A BSON document's int32 length prefix is impossible (below 5, or past the limit).
        case invalidLength
        /// The file ends inside a document.
        case truncated
        /// A BSON document's bytes do not follow the BSON specification.
        case malformedBSON
        /// A document of a JSON export is not valid JSON, or is not an object.
        case malformedJSON
        /// A `$`-keyed type wrapper of Extended JSON is malformed (`{"$numberLong": 1}`).
        case invalidExtendedJSON
        /// A value has no JSON form under the policy in effect (a date past 9999, `NaN`,
        /// a JavaScript value …).
        case unsupportedValue
        /// A field the JSON body cannot hold (a duplicate field name, U+0000).
        case invalidField
        /// A document nests deeper than the readers accept.
        case tooDeep
        /// The caller's policy refused the value (a closure of ``ImportPolicy`` threw).
        case refusedByPolicy
        /// The document has no `_id`, or one that cannot be an object id.
        case invalidID = "invalidId"
        /// The document has no partition field, or its value names no partition.
        case invalidPartition
        /// An App Services user of a users export that cannot become an account.
        case invalidUser
    }

    public var kind: Kind
    public var message: String
    /// The file, as the reader was given it.
    public var file: String?
    /// The document's number in the file, from 1.
    public var documentNumber: Int?
    /// The document's `_id`, as Extended JSON text (`{"$oid":"5f…"}`, `"u-1"`), when known.
    public var documentID: String?
    /// The field, when the problem is in one.
    public var path: FieldPath?
    /// The byte offset in the (decompressed) stream at which the document starts.
    public var byteOffset: Int64?
    /// The line on which the document starts, for JSON exports.
    public var line: Int?

    public init(
        _ kind: Kind, _ message: String, path: FieldPath? = nil, file: String? = nil, documentNumber: Int? = nil,
        documentID: String? = nil, byteOffset: Int64? = nil, line: Int? = nil
    ) {
        self.kind = kind
        self.message = message
        self.path = path
        self.file = file
        self.documentNumber = documentNumber
        self.documentID = documentID
        self.byteOffset = byteOffset
        self.line = line
    }

    /// This error with the document's place filled in where it is not known yet.
    public func located(
        file: String? = nil, documentNumber: Int? = nil, documentID: String? = nil, byteOffset: Int64? = nil,
        line: Int? = nil
    ) -> ImportError {
        var copy = self
        copy.file = copy.file ?? file
        copy.documentNumber = copy.documentNumber ?? documentNumber
        copy.documentID = copy.documentID ?? documentID
        copy.byteOffset = copy.byteOffset ?? byteOffset
        copy.line = copy.line ?? line
        return copy
    }

    /// `User.bson: document 3 (_id {"$oid":"…"}), field conversations[0].unreadCount: …`
    public var description: String {
        var place: [String] = []
        if let file { place.append(file) }
        var document = ""
        if let documentNumber { document = "document \(documentNumber)" }
        if let line { document += (document.isEmpty ? "" : " ") + "(line \(line))" }
        if let documentID { document += (document.isEmpty ? "" : " ") + "(_id \(documentID))" }
        if document.isEmpty, let byteOffset { document = "at byte \(byteOffset)" }
        if !document.isEmpty { place.append(document) }
        if let path, !path.isRoot { place.append("field \(path)") }
        return place.isEmpty ? message : place.joined(separator: ": ") + ": " + message
    }
}
