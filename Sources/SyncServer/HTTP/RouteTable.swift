import HTTPTypes
import Hummingbird
import Locking

/// The paths the server answers and their methods, taken from its routers once every route is
/// added (``load(_:)``), so a known path asked with another method gets 405 with `Allow`
/// rather than 404.
final class RouteTable: Sendable {
    /// Path patterns split at `/` (`{partition}` is a capture) with their methods.
    private let routes = Locked<[(pattern: [Substring], methods: [HTTPRequest.Method])]>([])

    /// Takes every route of `routers`.
    func load(_ routers: [Router<SyncRequestContext>]) {
        var table: [(pattern: [Substring], methods: [HTTPRequest.Method])] = []
        for route in routers.flatMap(\.routes) {
            let pattern = route.path.description.split(separator: "/")
            if let index = table.firstIndex(where: { $0.pattern == pattern }) {
                table[index].methods.append(route.method)
            } else {
                table.append((pattern, [route.method]))
            }
        }
        routes.withLock { $0 = table }
    }

    /// The methods of the route matching `path`, or `nil` when no route matches it. Where
    /// several match, the one with the most literal segments (as the router prefers a literal
    /// segment to a capture or a wildcard).
    func methods(for path: String) -> [HTTPRequest.Method]? {
        let segments = path.split(separator: "?", maxSplits: 1).first.map { $0.split(separator: "/") } ?? []
        return routes.withLock { routes in
            routes.filter { Self.matches($0.pattern, segments) }
                .max { Self.literals(in: $0.pattern) < Self.literals(in: $1.pattern) }?.methods
        }
    }

    /// How many of a pattern's segments are literal.
    static func literals(in pattern: [Substring]) -> Int {
        pattern.count(where: { !isVariable($0) })
    }

    /// Whether a pattern's segment stands for any segment: a capture (`{name}`), `*`, or `**`.
    static func isVariable(_ segment: Substring) -> Bool {
        segment.hasPrefix("{") || segment == "*" || segment == "**"
    }

    /// Whether a path's segments match a route's pattern: a literal segment itself, a capture
    /// or `*` any one segment, `**` one or more remaining segments.
    static func matches(_ pattern: [Substring], _ segments: [Substring]) -> Bool {
        var rest = segments[...]
        for (index, part) in pattern.enumerated() {
            if part == "**" { return index == pattern.count - 1 && !rest.isEmpty }
            guard let segment = rest.popFirst(), part == segment || part == "*" || part.hasPrefix("{") else { return false }
        }
        return rest.isEmpty
    }
}
