/// A Codable type stored as the objects of one collection, for typed access to partitions.
///
/// The object id is the body's `_id`; the server sets `_id` and `partition` in every body, so
/// a model can declare both and read them back.
///
/// ```swift
/// struct Note: SyncModel {
///     static let collection = "Note"
///     var _id: String
///     var text: String
/// }
/// let notes = try await handle.objects(Note.self)
/// try await handle.put(Note(_id: "n-1", text: "hi"))
/// ```
public protocol SyncModel: Codable, Sendable {
    /// The collection the objects of this type live in.
    static var collection: String { get }
    /// The object id.
    var _id: String { get }
    /// The value of the `type` field that names this kind of document, for a ``ModelFactory``:
    /// the collection unless the model says otherwise.
    static var documentType: String { get }
}

extension SyncModel {
    public static var documentType: String { collection }
}

extension SyncModel {
    /// The object's key.
    public var objectKey: ObjectKey {
        get throws(SyncError) { try ObjectKey(collection: Self.collection, id: _id) }
    }

    /// A `put` of the whole model: creates the object, or sets each of its top-level fields.
    /// `_id` and `partition` are left out (the server sets them from the key and the upload).
    public func putOperation() throws -> SyncOperation {
        guard var body = try JSONValue(encoding: self).objectValue else {
            throw SyncError(.invalidOperation, "\(Self.self) does not encode as a JSON object")
        }
        body["_id"] = nil
        body["partition"] = nil
        return .put(try objectKey, body: body)
    }

    /// Decodes the live objects of this type's collection; other collections and tombstones
    /// are skipped, and an object that does not decode is an error.
    public static func decode(_ objects: [SyncObject]) throws -> [Self] {
        try objects.filter { $0.key.collection == collection }.compactMap { object in
            try object.body.map { try JSONValue.object($0).decode(Self.self) }
        }
    }
}

extension SyncModel {
    /// Decodes the stored body of the object `key`; a body that does not decode is a
    /// `type_mismatch` error naming the object.
    public static func decode(_ body: [String: JSONValue], of key: ObjectKey) throws(SyncError) -> Self {
        do {
            return try JSONValue.object(body).decode(Self.self)
        } catch {
            throw SyncError(.typeMismatch, "\(key) does not decode as \(Self.self): \(String(describing: error).prefix(200))")
        }
    }
}

extension SyncModel {
    /// For a write validator of documents that name their kind in a `type` field (the
    /// Couchbase document model, as ``ModelFactory`` reads them): the model in `body`, or `nil`
    /// when there is none (the object did not exist before, or the change deletes it). A body
    /// whose `type` is not ``documentType``, or that does not decode as the model, refuses the
    /// upload (`validation_failed`), so no document passes for another kind.
    public static func validating(_ body: [String: JSONValue]?, of key: ObjectKey) throws(SyncError) -> Self? {
        guard let body else { return nil }
        guard body["type"] == .string(documentType) else {
            throw SyncError(.validationFailed, "a \(collection) document has type \"\(documentType)\"")
        }
        do {
            return try decode(body, of: key)
        } catch {
            throw SyncError(.validationFailed, "\(key) is not a valid \(collection) document")
        }
    }
}
