/// A typed reference to another object by its id (CouchModel's relationships): in JSON just the
/// id, as the seeds store them (`"wiki_id": "5737529525067657"`), in Swift a value that says
/// which model it leads to. The client SDK resolves one through its open partitions.
///
/// ```swift
/// struct Note: SyncModel {
///     static let collection = "note"
///     var _id: String
///     var folder: Reference<Folder>
/// }
/// let folder = try await client.resolve(note.folder)   // Folder?
/// ```
public struct Reference<Target: SyncModel>: Codable, Hashable, Sendable, CustomStringConvertible {
    /// The id of the object referred to.
    public var id: String

    public init(_ id: String) {
        self.id = id
    }

    /// A reference to `target`.
    public init(to target: Target) {
        self.id = target._id
    }

    /// The key of the object referred to: `Target`'s collection and the id.
    public var key: ObjectKey {
        get throws(SyncError) { try ObjectKey(collection: Target.collection, id: id) }
    }

    public init(from decoder: any Decoder) throws {
        id = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(id)
    }

    public var description: String { "\(Target.collection)/\(id)" }
}
