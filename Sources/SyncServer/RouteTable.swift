import HTTPTypes
import PartitionSync

/// The paths the server answers and their methods, so a known path asked with another method
/// gets 405 with `Allow` rather than 404.
struct RouteTable: Sendable {
    /// Path patterns (`v1/partitions/:partition/changes`) with their methods.
    let routes: [(pattern: [Substring], methods: [HTTPRequest.Method])]

    init(_ routes: [(String, [HTTPRequest.Method])]) {
        self.routes = routes.map { ($0.0.split(separator: "/"), $0.1) }
    }

    /// The methods of the route matching `path`, or `nil` when no route matches it.
    func methods(for path: String) -> [HTTPRequest.Method]? {
        let segments = path.split(separator: "?", maxSplits: 1).first.map { $0.split(separator: "/") } ?? []
        return routes.first { route in
            route.pattern.count == segments.count
                && zip(route.pattern, segments).allSatisfy { pattern, segment in pattern.hasPrefix(":") || pattern == segment }
        }?.methods
    }

    /// Every route of the server.
    static let server = RouteTable([
        ("health", [.get]), ("health/triggers", [.get]), ("ready", [.get]), ("metrics", [.get]),
        ("v1/auth/register", [.post]), ("v1/auth/login", [.post]), ("v1/auth/refresh", [.post]),
        ("v1/auth/logout", [.post]), ("v1/auth/user", [.delete]),
        ("v1/admin/triggers", [.get]), ("v1/admin/dead-letters", [.get]), ("v1/admin/dead-letters/:id/retry", [.post]),
        ("v1/admin/overview", [.get]), ("v1/admin/partitions", [.get]), ("v1/admin/partitions/:partition/objects", [.get]),
        ("v1/admin/partitions/:partition/changes", [.get]), ("v1/admin/events/:position", [.get]), ("v1/admin/users", [.get]),
        ("v1/admin/users/:id", [.delete]), ("v1/admin/users/:id/revoke-sessions", [.post]),
        ("console", [.get]), ("console/app.js", [.get]), ("console/app.css", [.get]),
        ("v1/partitions/:partition/changes", [.get]), ("v1/partitions/:partition/uploads", [.post]),
        ("v1/blobs/:digest", [.get, .head, .put]), ("v1/sync", [.get]),
    ])
}
