import SyncProtocol

/// Where a MongoDB document of a Realm app goes: its object id (from `_id`) and its
/// partition (from the partition field), and which fields leave the body because the engine
/// sets them. Pure.
///
/// - `_id`: an ObjectId becomes its 24-hex string, a UUID (`$uuid`, binary subtype 4) its
///   canonical string, a string stays, an Int32 or Int64 becomes its decimal text; anything
///   else is refused (``ImportError/Kind/invalidID``).
/// - The partition field (default `_partition`; when that is absent and no field was named,
///   `partition`, as RChat has it) holds a string `key=value`. With ``partitionKey`` a value
///   without `=` becomes `key=value` (`_partition: "5f…"` with `user` gives `user=5f…`).
///   Absent, not a string, or no partition: refused (``ImportError/Kind/invalidPartition``).
public struct DocumentPlacement: Sendable, Hashable {
    /// The partition field named by the operator, or `nil` for the default (`_partition`,
    /// then `partition`).
    public var partitionField: String?
    /// The key given to partition values that have none.
    public var partitionKey: String?
    /// Whether the partition field stays in the body (when it is not `partition`, which the
    /// engine always sets).
    public var keepsPartitionField: Bool

    public static let defaultPartitionField = "_partition"
    public static let detectedPartitionField = "partition"

    public init(partitionField: String? = nil, partitionKey: String? = nil, keepsPartitionField: Bool = false) {
        self.partitionField = partitionField
        self.partitionKey = partitionKey
        self.keepsPartitionField = keepsPartitionField
    }

    /// The object id, the partition, and the name of the partition field found.
    public func place(_ document: BSONDocument) throws(ImportError) -> (id: String, partition: Partition, field: String) {
        let id = try Self.objectID(document["_id"])
        let field: String
        if let partitionField {
            field = partitionField
        } else if document[Self.defaultPartitionField] == nil, document[Self.detectedPartitionField] != nil {
            field = Self.detectedPartitionField
        } else {
            field = Self.defaultPartitionField
        }
        guard let value = document[field] else {
            throw ImportError(
                .invalidPartition, "the document has no partition field '\(field)' (choose it with --partition-field)",
                path: FieldPath(field: field))
        }
        guard case .string(var text) = value else {
            throw ImportError(
                .invalidPartition, "the partition field holds a \(value.typeName), not a string", path: FieldPath(field: field))
        }
        if let partitionKey, !text.contains("=") { text = partitionKey + "=" + text }
        do {
            return (id, try Partition(text), field)
        } catch {
            let hint = partitionKey == nil && !text.contains("=") ? " (give values without a key one with --partition-key)" : ""
            throw ImportError(.invalidPartition, "\(error.message)\(hint)", path: FieldPath(field: field))
        }
    }

    /// The top-level fields ``place(_:)`` reads: `_id` and the partition fields it may take.
    public var fieldsRead: [String] {
        ["_id", Self.defaultPartitionField, Self.detectedPartitionField] + (partitionField.map { [$0] } ?? [])
    }

    /// `body` without the fields the engine sets (`_id`, `partition`) and without the
    /// partition field unless it is kept. Taken, not borrowed: the caller's body is changed in
    /// place rather than copied whole to remove three fields.
    public func body(_ body: consuming [String: JSONValue], partitionField field: String) -> [String: JSONValue] {
        var body = body
        body["_id"] = nil
        body[Self.detectedPartitionField] = nil
        if !keepsPartitionField { body[field] = nil }
        return body
    }

    /// The object id `value` gives, or the refusal.
    public static func objectID(_ value: BSONValue?) throws(ImportError) -> String {
        let id: String
        switch value {
        case nil:
            throw ImportError(.invalidID, "the document has no _id", path: FieldPath(field: "_id"))
        case .objectID(let objectID)?: id = objectID.hex
        case .string(let text)?: id = text
        case .int32(let number)?: id = String(number)
        case .int64(let number)?: id = String(number)
        case .binary(let binary)? where binary.subtype == BSONBinary.uuid && binary.bytes.count == 16:
            id = UUIDText.string(binary.bytes)
        case let other?:
            throw ImportError(.invalidID, "a \(other.typeName) _id cannot be an object id", path: FieldPath(field: "_id"))
        }
        do {
            _ = try ObjectKey(collection: "c", id: id)
        } catch {
            throw ImportError(.invalidID, error.message, path: FieldPath(field: "_id"))
        }
        return id
    }
}
