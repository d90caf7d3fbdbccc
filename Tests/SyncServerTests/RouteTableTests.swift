import HTTPTypes
import Hummingbird
import Testing

@testable import SyncServer

/// Which methods a path takes, for the 405 answer and its `Allow` header, read from the
/// routers without a server.
@Suite("Route table")
struct RouteTableTests {
    func table(_ add: (Router<SyncRequestContext>) -> Void) -> RouteTable {
        let router = Router(context: SyncRequestContext.self)
        add(router)
        let table = RouteTable()
        table.load([router])
        return table
    }

    @Test("a path under a recursive wildcard route takes that route's methods; the wildcard needs at least one segment")
    func recursiveWildcard() {
        let routes = table { router in
            router.get("app") { _, _ in "index" }
            router.get("app/**") { _, _ in "file" }
            router.get("sdk/js/**") { _, _ in "script" }
        }
        #expect(routes.methods(for: "/app/x") == [.get])
        #expect(routes.methods(for: "/app/css/site.css?v=2") == [.get])
        #expect(routes.methods(for: "/sdk/js/psync.js") == [.get])
        #expect(routes.methods(for: "/app") == [.get], "the literal route")
        #expect(routes.methods(for: "/sdk/js") == nil)
        #expect(routes.methods(for: "/other/x") == nil)
    }

    @Test("captures and single wildcards match exactly one segment")
    func captures() {
        let routes = table { router in
            router.get("v1/partitions/{partition}/changes") { _, _ in "changes" }
            router.post("v1/partitions/{partition}/uploads") { _, _ in "uploads" }
            router.get("v1/blobs/*") { _, _ in "blob" }
        }
        #expect(routes.methods(for: "/v1/partitions/user%3Du1/changes") == [.get])
        #expect(routes.methods(for: "/v1/partitions/user%3Du1/uploads") == [.post])
        #expect(routes.methods(for: "/v1/partitions/changes") == nil)
        #expect(routes.methods(for: "/v1/blobs/abc") == [.get])
        #expect(routes.methods(for: "/v1/blobs/abc/def") == nil)
    }

    @Test("where a literal route and a capture both match, the literal one answers, as the router prefers it, whatever the order they were added in")
    func literalFirst() {
        let routes = table { router in
            router.get("v1/things/{id}") { _, _ in "thing" }
            router.post("v1/things/new") { _, _ in "new" }
            router.delete("v1/things/{id}") { _, _ in "gone" }
        }
        #expect(routes.methods(for: "/v1/things/new") == [.post])
        #expect(Set(routes.methods(for: "/v1/things/t1") ?? []) == [.get, .delete])
    }
}
