extension SyncOperation {
    /// Whether applying the operation may add a blob reference to its object: its value holds
    /// an object with an `@blob` field, or its path reaches into one. Only such operations
    /// make the engine check that the referenced blobs are stored.
    public var mayAddBlobReference: Bool {
        switch self {
        case .put(_, let body): return Self.holdsBlobField(.object(body))
        case .set(_, let path, let value), .arrayAppend(_, let path, let value):
            return Self.holdsBlobField(value) || path.components.contains(.field(BlobReference.field))
        case .unset, .increment, .arrayRemove, .delete: return false
        }
    }

    private static func holdsBlobField(_ value: JSONValue) -> Bool {
        switch value {
        case .object(let fields):
            fields[BlobReference.field] != nil || fields.values.contains(where: holdsBlobField)
        case .array(let elements):
            elements.contains(where: holdsBlobField)
        default:
            false
        }
    }
}
