import Hummingbird
import HTTPTypes

/// Serves the web console at `/console`: one page, its style sheet and script, from the
/// binary. They hold no data and need no key; every piece of data the console shows comes from
/// an admin endpoint that takes one (``AdminRoutes``). The content security policy lets the
/// page run its own script and talk to this server only.
struct ConsoleRoutes: Sendable {
    func add(to router: Router<SyncRequestContext>) {
        router.get("console") { _, _ in Self.asset(ConsoleAssets.page, type: "text/html; charset=utf-8") }
        router.get("console/app.js") { _, _ in Self.asset(ConsoleAssets.script, type: "text/javascript; charset=utf-8") }
        router.get("console/app.css") { _, _ in Self.asset(ConsoleAssets.style, type: "text/css; charset=utf-8") }
        router.get("favicon.ico") { _, _ in Self.asset(ConsoleAssets.icon, type: "image/svg+xml") }
    }

    static let securityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "frame-ancestors 'none'; base-uri 'none'; form-action 'self'"

    static func asset(_ text: String, type: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.contentSecurityPolicy] = securityPolicy
        headers[.xContentTypeOptions] = "nosniff"
        headers[.cacheControl] = "no-cache"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: .init(string: text)))
    }
}
