/// Which fields a policy rule applies to: field names from the top of the document, array
/// indices left out, `*` for any one name. `"image.picture"` matches `image.picture` and
/// `images[3].picture`; `"conversations.*.avatar"` any field's `avatar` one level down.
public struct FieldPattern: Hashable, Sendable, CustomStringConvertible, ExpressibleByStringLiteral {
    public var names: [String]

    /// Dot-separated names (a name with a `.` in it needs ``init(names:)``).
    public init(_ text: String) {
        self.names = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
    }

    public init(names: [String]) {
        self.names = names
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    public func matches(_ path: FieldPath) -> Bool {
        let fieldNames = path.fieldNames
        guard fieldNames.count == names.count else { return false }
        return zip(names, fieldNames).allSatisfy { $0 == "*" || $0 == $1 }
    }

    public var description: String { names.joined(separator: ".") }
}
