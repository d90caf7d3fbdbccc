import SyncProtocol

/// An index an application declares on object bodies, for the searches of its triggers and
/// rules (``TriggerContext/find(_:where:in:)``, ``TriggerContext/find(_:whereArray:field:is:)``,
/// ``TriggerContext/find(_:whereArray:contains:)``). Created at server start if missing;
/// indexes named `psync_ix_…` that no longer are declared are dropped then.
///
/// Declaring one cannot fail: the server checks every declaration when it starts (a
/// collection name, a path of letters, digits and `_`, a name PostgreSQL keeps whole) and
/// refuses to start on a bad one, naming it, before it creates any.
public struct ObjectIndex: Sendable, Hashable {
    package enum Kind: Sendable, Hashable {
        case field
        case arrayContains
        /// The values of one field of an array's elements.
        case arrayElements(field: String)
    }

    package let kind: Kind
    public let collection: String
    /// Dot-separated field names of letters, digits and `_`.
    public let path: String

    /// Objects of a collection by the text value at a path: `User` by `userName`.
    public static func field(collection: String, path: String) -> ObjectIndex {
        ObjectIndex(kind: .field, collection: collection, path: path)
    }

    /// Objects of a collection by the elements of an array at a path: `User` by the `id`s in
    /// `conversations` (a GIN index for JSON containment).
    public static func arrayContains(collection: String, path: String) -> ObjectIndex {
        ObjectIndex(kind: .arrayContains, collection: collection, path: path)
    }

    /// Objects of a collection by one field of the elements of an array at a path: `User` by
    /// the `id` of each of its `conversations`. It serves
    /// ``WriteTransaction/find(_:whereArray:field:is:)``.
    ///
    /// Not an index of `psync_objects` but rows of `psync_element_entries`, one per object and
    /// value, kept by triggers (migration 0007): they are rewritten only when the values
    /// change, so a record rewritten often for other reasons (RChat raises unread counts in
    /// it) leaves them alone, and a search reads only live entries — where an index of the
    /// body would hold an entry for every version of the record until VACUUM.
    public static func arrayElements(collection: String, path: String, field: String) -> ObjectIndex {
        ObjectIndex(kind: .arrayElements(field: field), collection: collection, path: path)
    }

    private init(kind: Kind, collection: String, path: String) {
        self.kind = kind
        self.collection = collection
        self.path = path
    }

    /// Checks the declaration: `invalid_path` (or the collection name's own error) naming
    /// what to change.
    package func check() throws(SyncError) {
        _ = try ObjectKey(collection: collection, id: "x")
        try Self.checkPath(path)
        if case .arrayElements(let field) = kind { try Self.checkPath(field) }
        // PostgreSQL cuts longer identifiers short: the index, or an element index's triggers
        // (its name and a suffix), would not be found again by name.
        let longest = Self.maximumIdentifierBytes - (isTableIndex ? 0 : Self.triggerSuffixes.map(\.utf8.count).max()!)
        guard name.utf8.count <= longest else {
            throw SyncError(.invalidPath, "the index name \(name) is longer than \(longest) bytes: use a shorter collection, path or field")
        }
    }

    /// PostgreSQL's longest identifier (NAMEDATALEN - 1).
    package static let maximumIdentifierBytes = 63

    package static func checkPath(_ path: String) throws(SyncError) {
        let fields = path.split(separator: ".", omittingEmptySubsequences: false)
        guard !fields.isEmpty, fields.allSatisfy({ field in
            !field.isEmpty && field.utf8.allSatisfy { $0 == UInt8(ascii: "_") || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }
        }) else {
            throw SyncError(.invalidPath, "an index or search path is dot-separated names of letters, digits and '_'")
        }
    }

    package static let namePrefix = "psync_ix_"

    package var name: String {
        let suffix: String
        switch kind {
        case .field: suffix = "field"
        case .arrayContains: suffix = "contains"
        case .arrayElements(let field): suffix = "\(field.lowercased())_elements"
        }
        return "\(Self.namePrefix)\(collection.lowercased())_\(path.split(separator: ".", omittingEmptySubsequences: false).joined(separator: "_").lowercased())_\(suffix)"
    }

    package var isTableIndex: Bool {
        if case .arrayElements = kind { return false }
        return true
    }

    /// The names of an element index's triggers on `psync_objects`.
    package static let triggerSuffixes = ["_insert", "_update", "_delete"]
}
