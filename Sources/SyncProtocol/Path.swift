/// A path into an object body: dot-separated field names, `[3]` for an array index and
/// `[id=c-42]` for the first array element whose field `id` equals the string `"c-42"`.
///
/// Example: `conversations[id=c-42].unreadCount`.
public struct Path: Sendable, Hashable, CustomStringConvertible {
    public enum Component: Sendable, Hashable {
        case field(String)
        case index(Int)
        case match(field: String, value: String)
    }

    /// The longest path text accepted, in bytes.
    public static let maximumLength = 1024
    /// The most components a path may have.
    public static let maximumComponents = 64

    public let components: [Component]

    /// Builds a path from components; the first must be a field.
    public init(_ components: [Component]) throws(SyncError) {
        guard case .field = components.first else {
            throw SyncError(.invalidPath, "a path starts with a field name")
        }
        guard components.count <= Self.maximumComponents else {
            throw SyncError(.invalidPath, "a path has at most \(Self.maximumComponents) components")
        }
        self.components = components
    }

    /// Parses the path syntax, throwing `invalid_path` with the position of the problem.
    public init(parsing text: String) throws(SyncError) {
        let bytes = Array(text.utf8)
        guard !bytes.isEmpty else { throw SyncError(.invalidPath, "a path is not empty") }
        guard bytes.count <= Self.maximumLength else {
            throw SyncError(.invalidPath, "a path has at most \(Self.maximumLength) bytes")
        }
        var components: [Component] = []
        var index = 0
        func fail(_ reason: String) -> SyncError {
            SyncError(.invalidPath, "\(reason) at offset \(index) of path \(Partition.quoted(text))")
        }
        func readName(stoppingAt stops: Set<UInt8>) -> String? {
            let start = index
            while index < bytes.count, !stops.contains(bytes[index]) { index += 1 }
            guard index > start else { return nil }
            return String(decoding: bytes[start..<index], as: UTF8.self)
        }
        let fieldStops: Set<UInt8> = [UInt8(ascii: "."), UInt8(ascii: "["), UInt8(ascii: "]")]
        guard let first = readName(stoppingAt: fieldStops) else { throw fail("expected a field name") }
        components.append(.field(first))
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "."):
                index += 1
                guard let name = readName(stoppingAt: fieldStops) else { throw fail("expected a field name") }
                components.append(.field(name))
            case UInt8(ascii: "["):
                index += 1
                let selectorStart = index
                while index < bytes.count, bytes[index] != UInt8(ascii: "]") { index += 1 }
                guard index < bytes.count else { throw fail("missing ']'") }
                let selector = bytes[selectorStart..<index]
                index += 1
                if let equals = selector.firstIndex(of: UInt8(ascii: "=")) {
                    let field = String(decoding: selector[selectorStart..<equals], as: UTF8.self)
                    let value = String(decoding: selector[(equals + 1)...], as: UTF8.self)
                    guard !field.isEmpty, !value.isEmpty, !field.utf8.contains(UInt8(ascii: "[")) else {
                        throw fail("a selector is [field=value]")
                    }
                    components.append(.match(field: field, value: value))
                } else {
                    guard !selector.isEmpty, selector.count <= 9,
                        selector.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                        selector.count == 1 || selector.first != UInt8(ascii: "0"),
                        let position = Int(String(decoding: selector, as: UTF8.self))
                    else {
                        throw fail("an index is a non-negative integer without leading zeros")
                    }
                    components.append(.index(position))
                }
            default:
                throw fail("expected '.' or '['")
            }
        }
        try self.init(components)
    }

    /// The first field name: the top-level field the path changes.
    public var topLevelField: String {
        guard case .field(let name) = components[0] else { preconditionFailure("a path starts with a field") }
        return name
    }

    public var description: String {
        var text = ""
        for component in components {
            switch component {
            case .field(let name): text += text.isEmpty ? name : "." + name
            case .index(let position): text += "[\(position)]"
            case .match(let field, let value): text += "[\(field)=\(value)]"
            }
        }
        return text
    }
}
