import SyncProtocol

/// A search of one collection's live objects by what their bodies hold, in every partition:
/// what a trigger's ``TriggerContext/find(_:where:in:)`` and its siblings ask. A declared
/// ``ObjectIndex`` of the same collection and path serves it; without one the engine scans
/// the collection.
///
/// ``matches(_:)`` evaluates it in memory the way PostgreSQL evaluates its SQL form: the
/// engine answers a search from the database and then from its transaction's unwritten
/// changes, and the test kit's `InMemoryObjects` answers it from its objects.
public struct ObjectSearch: Sendable, Hashable {
    public enum Condition: Sendable, Hashable {
        /// The text at the path is one of these (`body #>> path = ANY(values)`).
        case field(Set<String>)
        /// The array at the path holds an element containing this one (`(body #> path) @> [element]`).
        case arrayContains(JSONValue)
        /// The array at the path has an element whose field is this value
        /// (`jsonb_path_query_array(body, '$.path[*].field') @> [value]`, in jsonpath's lax
        /// mode: an accessor applied to an array applies to its elements, one level; `[*]` of
        /// a value that is not an array is the value itself; what is missing yields nothing).
        case elementField(String, JSONValue)
    }

    public let collection: String
    /// Dot-separated field names of letters, digits and `_`.
    public let path: String
    public let condition: Condition

    public init(collection: String, path: String, condition: Condition) {
        self.collection = collection
        self.path = path
        self.condition = condition
    }

    /// Objects whose text at `path` is one of `values`.
    public static func field(_ collection: String, path: String, in values: [String]) -> ObjectSearch {
        ObjectSearch(collection: collection, path: path, condition: .field(Set(values)))
    }

    /// Objects whose array at `path` holds an element containing `element`.
    public static func array(_ collection: String, path: String, contains element: JSONValue) -> ObjectSearch {
        ObjectSearch(collection: collection, path: path, condition: .arrayContains(element))
    }

    /// Objects whose array at `path` has an element whose `field` is `value`.
    public static func array(_ collection: String, path: String, field: String, is value: JSONValue) -> ObjectSearch {
        ObjectSearch(collection: collection, path: path, condition: .elementField(field, value))
    }

    /// Checks the path (and the element field): `invalid_path` when it is not dot-separated
    /// names of letters, digits and `_`.
    package func check() throws(SyncError) {
        try ObjectIndex.checkPath(path)
        if case .elementField(let field, _) = condition { try ObjectIndex.checkPath(field) }
    }

    /// Whether a live object's body is found by the search.
    public func matches(_ body: [String: JSONValue]) -> Bool {
        let steps = path.split(separator: ".").map(String.init)
        if case .elementField(let field, let wanted) = condition {
            var items: [JSONValue] = [.object(body)]
            for step in steps { items = Self.member(step, of: items) }
            items = items.flatMap { item -> [JSONValue] in
                if case .array(let elements) = item { return elements }
                return [item]
            }
            return Self.contains(.array(Self.member(field, of: items)), .array([wanted]))
        }
        var value = JSONValue.object(body)
        for step in steps {
            guard let next = value.objectValue?[step] else { return false }
            value = next
        }
        switch condition {
        case .field(let values):
            return Self.text(of: value).map(values.contains) ?? false
        case .arrayContains(let element):
            return value.arrayValue?.contains { Self.contains($0, element) } ?? false
        case .elementField:
            return false  // answered above
        }
    }

    /// A lax jsonpath member accessor (`.field`) applied to each of `items`.
    private static func member(_ field: String, of items: [JSONValue]) -> [JSONValue] {
        items.flatMap { item -> [JSONValue] in
            switch item {
            case .object(let fields): return fields[field].map { [$0] } ?? []
            case .array(let elements): return elements.compactMap { $0.objectValue?[field] }
            default: return []
            }
        }
    }

    /// What `#>>` yields: a string as it is, JSON null as SQL NULL, anything else as JSON text.
    private static func text(of value: JSONValue) -> String? {
        switch value {
        case .null: return nil
        case .string(let string): return string
        default: return value.jsonString
        }
    }

    /// jsonb containment (`@>`) of two values nested in documents: objects contain objects
    /// whose fields they contain, arrays contain arrays whose every element one of theirs
    /// contains, and scalars contain equal scalars.
    private static func contains(_ container: JSONValue, _ contained: JSONValue) -> Bool {
        switch (container, contained) {
        case (.object(let outer), .object(let inner)):
            return inner.allSatisfy { field, value in outer[field].map { contains($0, value) } ?? false }
        case (.array(let outer), .array(let inner)):
            return inner.allSatisfy { value in outer.contains { contains($0, value) } }
        case (.object, _), (_, .object), (.array, _), (_, .array):
            return false
        default:
            return container.isEquivalent(to: contained)
        }
    }
}
