import SyncProtocol

/// The condition of a body search (``WriteTransaction/find(_:where:in:)``,
/// ``WriteTransaction/find(_:whereArray:contains:)``), evaluated in memory the way PostgreSQL
/// evaluates its SQL form: a transaction that defers its writes answers searches from the
/// database and then from its own unwritten changes.
struct BodyPredicate: Hashable, Sendable {
    enum Condition: Hashable, Sendable {
        /// `body #>> path = ANY(values)`
        case field(Set<String>)
        /// `(body #> path) @> [element]`
        case arrayContains(JSONValue)
        /// `jsonb_path_query_array(body, '$.path[*].field') @> [value]`, in jsonpath's lax
        /// mode: an accessor applied to an array applies to its elements (one level), `[*]` of
        /// a value that is not an array is the value itself, and what is missing yields
        /// nothing.
        case elementField(String, JSONValue)
    }

    /// Field names from the body's top level.
    let path: [String]
    let condition: Condition

    init(path: String, condition: Condition) {
        self.path = path.split(separator: ".").map(String.init)
        self.condition = condition
    }

    func matches(_ body: [String: JSONValue]) -> Bool {
        if case .elementField(let field, let wanted) = condition {
            var items: [JSONValue] = [.object(body)]
            for step in path { items = Self.member(step, of: items) }
            items = items.flatMap { item -> [JSONValue] in
                if case .array(let elements) = item { return elements }
                return [item]
            }
            return Self.contains(.array(Self.member(field, of: items)), .array([wanted]))
        }
        var value = JSONValue.object(body)
        for field in path {
            guard let next = value.objectValue?[field] else { return false }
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
    static func member(_ field: String, of items: [JSONValue]) -> [JSONValue] {
        items.flatMap { item -> [JSONValue] in
            switch item {
            case .object(let fields): return fields[field].map { [$0] } ?? []
            case .array(let elements): return elements.compactMap { $0.objectValue?[field] }
            default: return []
            }
        }
    }

    /// What `#>>` yields: a string as it is, JSON null as SQL NULL, anything else as JSON text.
    static func text(of value: JSONValue) -> String? {
        switch value {
        case .null: return nil
        case .string(let string): return string
        default: return value.jsonString
        }
    }

    /// jsonb containment (`@>`) of two values nested in documents: objects contain objects
    /// whose fields they contain, arrays contain arrays whose every element one of theirs
    /// contains, and scalars contain equal scalars.
    static func contains(_ container: JSONValue, _ contained: JSONValue) -> Bool {
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
