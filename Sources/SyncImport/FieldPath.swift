/// Where a value sits in a document: field names and array indices from the top, such as
/// `conversations[2].members[0].userName`. Errors name it; the policies are keyed by it.
///
/// Written like the protocol's paths (docs/PROTOCOL.md, "Paths"), except that a field name a
/// path could not hold (empty, or with `.`, `[`, `]` or `"`) is written as a quoted subscript:
/// `prices["1.5"]`.
public struct FieldPath: Hashable, Sendable, CustomStringConvertible {
    public enum Component: Hashable, Sendable {
        case field(String)
        case index(Int)
    }

    public var components: [Component]

    public init(_ components: [Component] = []) {
        self.components = components
    }

    /// The path of the top-level field `name`.
    public init(field name: String) {
        self.components = [.field(name)]
    }

    /// The document itself.
    public static let root = FieldPath()

    public var isRoot: Bool { components.isEmpty }

    /// The field names only, array indices left out: `conversations.members.userName`. What a
    /// ``FieldPattern`` matches against.
    public var fieldNames: [String] {
        components.compactMap { if case .field(let name) = $0 { name } else { nil } }
    }

    public func appending(_ component: Component) -> FieldPath {
        FieldPath(components + [component])
    }

    public func appending(field name: String) -> FieldPath { appending(.field(name)) }

    public func appending(index: Int) -> FieldPath { appending(.index(index)) }

    public var description: String {
        if components.isEmpty { return "(the document)" }
        var text = ""
        for component in components {
            switch component {
            case .index(let index):
                text += "[\(index)]"
            case .field(let name) where Self.isPlain(name):
                if !text.isEmpty { text += "." }
                text += name
            case .field(let name):
                text += "[" + Self.quoted(name) + "]"
            }
        }
        return text
    }

    private static func isPlain(_ name: String) -> Bool {
        !name.isEmpty && !name.unicodeScalars.contains { "\".[]".unicodeScalars.contains($0) || $0.value < 0x20 }
    }

    private static func quoted(_ name: String) -> String {
        var text = "\""
        for scalar in name.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    text.unicodeScalars.append(scalar)
                }
            }
        }
        return text + "\""
    }
}

/// A stack of path components kept while walking a document, so that the walk allocates no
/// path until one is needed (for an error or a policy look-up).
struct PathStack {
    private(set) var components: [FieldPath.Component] = []

    mutating func push(_ component: FieldPath.Component) { components.append(component) }
    mutating func pop() { components.removeLast() }
    var path: FieldPath { FieldPath(components) }
    var depth: Int { components.count }
}
