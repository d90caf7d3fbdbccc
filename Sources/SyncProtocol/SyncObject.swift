/// An object as sent to clients: its identity, version, and body or tombstone.
///
/// Wire form: `{"collection":"ChatMessage","id":"m-1","version":17,"deleted":false,"body":{…}}`;
/// a tombstone has `"deleted":true` and no `body`.
public struct SyncObject: Sendable, Hashable {
    public var key: ObjectKey
    /// The partition version of the commit that last changed the object.
    public var version: Int64
    /// The body, or `nil` for a tombstone.
    public var body: [String: JSONValue]?

    public init(key: ObjectKey, version: Int64, body: [String: JSONValue]?) {
        self.key = key
        self.version = version
        self.body = body
    }

    public var isDeleted: Bool { body == nil }

    /// The state this object stands for.
    public var state: DocumentState {
        body.map(DocumentState.live) ?? .deleted
    }

    /// The wire form.
    public var json: JSONValue {
        var fields: [String: JSONValue] = [
            "collection": .string(key.collection), "id": .string(key.id), "version": .int(version),
            "deleted": .bool(body == nil),
        ]
        if let body { fields["body"] = .object(body) }
        return .object(fields)
    }

    /// Decodes the wire form.
    public init(json: JSONValue) throws(SyncError) {
        guard let collection = json["collection"]?.stringValue, let id = json["id"]?.stringValue,
            let version = json["version"]?.intValue, let deleted = json["deleted"]?.boolValue
        else {
            throw SyncError(.badRequest, "an object has collection, id, version and deleted")
        }
        let body = json["body"]?.objectValue
        guard deleted == (body == nil) else {
            throw SyncError(.badRequest, "an object has a body exactly when it is not deleted")
        }
        self.init(key: try ObjectKey(collection: collection, id: id), version: version, body: body)
    }
}
