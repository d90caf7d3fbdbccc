import Foundation
import HTTPTypes
import Hummingbird
import PartitionSync
import SyncProtocol

/// Serves an application's web app (``WebApp``) at `/app/`: `/app/` is `index.html`,
/// `/app/<path>` a file of it, anything else 404 with the usual JSON error (everything, for an
/// application without one: the routes stay, so another method is 405). `/` redirects to
/// `/app/` when there is a web app. Only the files read when the app was made can be named, so no path reaches
/// outside them; `..` and `.` are refused before the lookup all the same. The content security
/// policy lets pages run only scripts of this origin (no inline script or style) and talk to
/// this server only.
struct WebAppRoutes: Sendable {
    let web: WebApp?

    static let securityPolicy =
        "default-src 'self'; script-src 'self'; connect-src 'self' ws: wss:; img-src 'self' blob: data:; "
        + "style-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

    func add(to router: Router<SyncRequestContext>) {
        if web != nil { router.get("/") { _, _ in Self.redirectToApp } }
        // `/app` and `/app/` both arrive here (the router drops the trailing slash): only the
        // second makes the page's relative URLs resolve under /app/.
        router.get("app") { request, _ -> Response in
            guard self.web == nil || request.uri.path.hasSuffix("/") else { return Self.redirectToApp }
            return try self.file("index.html")
        }
        router.get("app/**") { _, context -> Response in
            let components = try context.parameters.getCatchAll().map { component -> String in
                guard let decoded = String(component).removingPercentEncoding else {
                    throw SyncError(.notFound, "no file app/\(context.parameters.getCatchAll().joined(separator: "/"))")
                }
                return decoded
            }
            return try self.file(components.joined(separator: "/"))
        }
    }

    /// 302 Found to `/app/`.
    static var redirectToApp: Response { Response(status: .found, headers: [.location: "/app/"]) }

    /// The file at `path` (already percent-decoded), with its headers; `not_found` when the app
    /// has none there, or the path is not plain (`..`, `.`, an encoded `/`).
    func file(_ path: String) throws -> Response {
        guard WebApp.isServable(path), let bytes = web?.file(at: path) else {
            throw SyncError(.notFound, "no file app/\(path)")
        }
        var headers = HTTPFields()
        headers[.contentType] = Self.contentType(of: path)
        headers[.contentSecurityPolicy] = Self.securityPolicy
        headers[.xContentTypeOptions] = "nosniff"
        // The app changes with the server: a page revalidates its files.
        headers[.cacheControl] = "no-cache"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    /// The media type of a file, by its extension.
    static func contentType(of path: String) -> String {
        let name = path.split(separator: "/").last ?? ""
        let ext = name.contains(".") ? name.split(separator: ".").last.map { $0.lowercased() } ?? "" : ""
        switch ext {
        case "html", "htm": return "text/html; charset=utf-8"
        case "js", "mjs": return "text/javascript; charset=utf-8"
        case "css": return "text/css; charset=utf-8"
        case "json": return "application/json"
        case "webmanifest": return "application/manifest+json"
        case "svg": return "image/svg+xml"
        case "png": return "image/png"
        case "jpg", "jpeg": return "image/jpeg"
        case "ico": return "image/x-icon"
        case "txt": return "text/plain; charset=utf-8"
        default: return "application/octet-stream"
        }
    }
}
