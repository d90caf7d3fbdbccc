/// A JSON value as stored in object bodies and carried in protocol messages.
///
/// Integers that fit in 64 bits stay integers (`int`), so counters round-trip exactly;
/// every other number is a `double`. Object key order is not preserved (PostgreSQL's
/// `jsonb` does not keep it either).
public enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])
}

extension JSONValue {
    /// The fields when this is an object, else `nil`.
    public var objectValue: [String: JSONValue]? {
        if case .object(let fields) = self { return fields }
        return nil
    }

    /// The elements when this is an array, else `nil`.
    public var arrayValue: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// The string when this is a string, else `nil`.
    public var stringValue: String? {
        if case .string(let string) = self { return string }
        return nil
    }

    /// The boolean when this is a boolean, else `nil`.
    public var boolValue: Bool? {
        if case .bool(let value) = self { return value }
        return nil
    }

    /// The number as an `Int64` when it is an integer, or a double with an exact integer value.
    public var intValue: Int64? {
        switch self {
        case .int(let value): return value
        case .double(let value):
            guard value.rounded() == value, let exact = Int64(exactly: value) else { return nil }
            return exact
        default: return nil
        }
    }

    /// The number as a `Double`, for either kind of number.
    public var doubleValue: Double? {
        switch self {
        case .int(let value): return Double(value)
        case .double(let value): return value
        default: return nil
        }
    }

    /// Whether this is `null`.
    public var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// Field lookup on an object; `nil` for a missing field or a non-object.
    public subscript(field: String) -> JSONValue? {
        objectValue?[field]
    }

    /// How deeply containers nest: a scalar is 0, `[]` and `{}` are 1, `[[1]]` is 2.
    public var depth: Int {
        switch self {
        case .array(let elements): return 1 + (elements.map(\.depth).max() ?? 0)
        case .object(let fields): return 1 + (fields.values.map(\.depth).max() ?? 0)
        default: return 0
        }
    }

    /// JSON equality as the operations use it: numbers compare by value (`1 == 1.0`),
    /// objects by their fields regardless of order.
    public func isEquivalent(to other: JSONValue) -> Bool {
        switch (self, other) {
        case (.int(let a), .int(let b)): return a == b
        case (.int, .double), (.double, .int), (.double, .double):
            return self.doubleValue == other.doubleValue
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isEquivalent(to: $1) }
        case (.object(let a), .object(let b)):
            guard a.count == b.count else { return false }
            return a.allSatisfy { key, value in b[key].map { value.isEquivalent(to: $0) } ?? false }
        default:
            return self == other
        }
    }

    /// Whether this object has every field of `pattern` with an equivalent value: the match
    /// rule of `arrayRemove` when `match` is an object.
    public func contains(fieldsOf pattern: [String: JSONValue]) -> Bool {
        guard let fields = objectValue else { return false }
        return pattern.allSatisfy { key, value in fields[key].map { $0.isEquivalent(to: value) } ?? false }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(stringLiteral value: String) { self = .string(value) }
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}
