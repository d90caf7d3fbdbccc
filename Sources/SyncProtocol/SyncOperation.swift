/// One change to one object, as uploaded by a client or applied by a trigger.
///
/// Operations apply in order to the server's current state (see docs/PROTOCOL.md,
/// "Operations"). On the wire each is a JSON object with an `op` field:
/// `{"op":"set","collection":"User","id":"u-1","path":"presence","value":"On-Line"}`.
public enum SyncOperation: Sendable, Hashable {
    /// Create the object with `body`, or, if it exists, set each top-level field of `body`.
    case put(ObjectKey, body: [String: JSONValue])
    /// Set the field at `path` (intermediate objects are created).
    case set(ObjectKey, path: Path, value: JSONValue)
    /// Remove the field or element at `path`; nothing happens if it is absent.
    case unset(ObjectKey, path: Path)
    /// Add `by` to the number at `path`; a missing field counts as 0.
    case increment(ObjectKey, path: Path, by: JSONValue)
    /// Append `value` to the array at `path`, creating the array if missing.
    case arrayAppend(ObjectKey, path: Path, value: JSONValue)
    /// Remove every element equal to `match`, or, when `match` is an object, every element
    /// whose fields include all of `match`'s.
    case arrayRemove(ObjectKey, path: Path, match: JSONValue)
    /// Delete the object; later operations on it in the same upload are dropped.
    case delete(ObjectKey)

    /// The object this operation changes.
    public var key: ObjectKey {
        switch self {
        case .put(let key, _), .set(let key, _, _), .unset(let key, _), .increment(let key, _, _),
            .arrayAppend(let key, _, _), .arrayRemove(let key, _, _), .delete(let key):
            return key
        }
    }

    /// The wire name of the operation (`put`, `set`, …).
    public var name: String {
        switch self {
        case .put: "put"
        case .set: "set"
        case .unset: "unset"
        case .increment: "increment"
        case .arrayAppend: "arrayAppend"
        case .arrayRemove: "arrayRemove"
        case .delete: "delete"
        }
    }

    /// The path the operation changes, for those that have one.
    public var path: Path? {
        switch self {
        case .set(_, let path, _), .unset(_, let path), .increment(_, let path, _), .arrayAppend(_, let path, _),
            .arrayRemove(_, let path, _):
            return path
        case .put, .delete:
            return nil
        }
    }
}

extension SyncOperation {
    /// Decodes the wire form, throwing a ``SyncError`` naming the field at fault:
    /// `invalid_operation`, `invalid_collection`, `invalid_object_id` or `invalid_path`.
    public init(json: JSONValue) throws(SyncError) {
        guard let fields = json.objectValue else {
            throw SyncError(.invalidOperation, "an operation is a JSON object")
        }
        guard let op = fields["op"]?.stringValue else {
            throw SyncError(.invalidOperation, "an operation has a string field 'op'")
        }
        guard let collection = fields["collection"]?.stringValue else {
            throw SyncError(.invalidOperation, "operation '\(Partition.quoted(op))' needs a string 'collection'")
        }
        guard let id = fields["id"]?.stringValue else {
            throw SyncError(.invalidOperation, "operation '\(Partition.quoted(op))' needs a string 'id'")
        }
        let key = try ObjectKey(collection: collection, id: id)

        func required(_ name: String) throws(SyncError) -> JSONValue {
            guard let value = fields[name] else {
                throw SyncError(.invalidOperation, "operation '\(op)' needs a field '\(name)'")
            }
            return value
        }
        func path() throws(SyncError) -> Path {
            guard let text = try required("path").stringValue else {
                throw SyncError(.invalidOperation, "operation '\(op)' needs a string 'path'")
            }
            return try Path(parsing: text)
        }

        switch op {
        case "put":
            guard let body = try required("body").objectValue else {
                throw SyncError(.invalidOperation, "operation 'put' needs an object 'body'")
            }
            self = .put(key, body: body)
        case "set":
            self = .set(key, path: try path(), value: try required("value"))
        case "unset":
            self = .unset(key, path: try path())
        case "increment":
            let by = try required("by")
            guard by.doubleValue != nil else {
                throw SyncError(.invalidOperation, "operation 'increment' needs a number 'by'")
            }
            self = .increment(key, path: try path(), by: by)
        case "arrayAppend":
            self = .arrayAppend(key, path: try path(), value: try required("value"))
        case "arrayRemove":
            self = .arrayRemove(key, path: try path(), match: try required("match"))
        case "delete":
            self = .delete(key)
        default:
            throw SyncError(.invalidOperation, "unknown operation \(Partition.quoted(op))")
        }
    }

    /// The wire form.
    public var json: JSONValue {
        var fields: [String: JSONValue] = [
            "op": .string(name), "collection": .string(key.collection), "id": .string(key.id),
        ]
        if let path { fields["path"] = .string(path.description) }
        switch self {
        case .put(_, let body): fields["body"] = .object(body)
        case .set(_, _, let value), .arrayAppend(_, _, let value): fields["value"] = value
        case .increment(_, _, let by): fields["by"] = by
        case .arrayRemove(_, _, let match): fields["match"] = match
        case .unset, .delete: break
        }
        return .object(fields)
    }
}

extension SyncOperation: Codable {
    public init(from decoder: any Decoder) throws {
        let json = try JSONValue(from: decoder)
        do {
            try self.init(json: json)
        } catch {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: error.description, underlyingError: error))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        try json.encode(to: encoder)
    }
}
