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

    /// The methods of the route matching `path`, or `nil` when no route matches it.
    func methods(for path: String) -> [HTTPRequest.Method]? {
        let segments = path.split(separator: "?", maxSplits: 1).first.map { $0.split(separator: "/") } ?? []
        return routes.withLock { routes in
            routes.first { route in
                route.pattern.count == segments.count
                    && zip(route.pattern, segments).allSatisfy { pattern, segment in pattern.hasPrefix("{") || pattern == segment }
            }?.methods
        }
    }
}
