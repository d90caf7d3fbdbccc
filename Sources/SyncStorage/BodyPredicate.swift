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
    }

    /// Field names from the body's top level.
    let path: [String]
    let condition: Condition

    init(path: String, condition: Condition) {
        self.path = path.split(separator: ".").map(String.init)
        self.condition = condition
    }

    func matches(_ body: [String: JSONValue]) -> Bool {
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
