import Foundation
import Hummingbird
import HTTPTypes
import SyncProtocol
import WebClient

/// Serves the JavaScript client SDK at `/sdk/js/` (`/sdk/js/index.js` and the modules it
/// imports), so a web app loads it from its server with no bundler:
/// `import { SyncClient } from "/sdk/js/index.js"`. Only the SDK's own files are served; any
/// other path is 404.
struct WebClientRoutes: Sendable {
    func add(to router: Router<SyncRequestContext>) {
        router.get("sdk/js/**") { _, context -> Response in
            let path = context.parameters.getCatchAll().joined(separator: "/")
            guard let data = WebClientAssets.files[path] else {
                throw SyncError(.notFound, "no file sdk/js/\(path)")
            }
            var headers = HTTPFields()
            headers[.contentType] = "text/javascript; charset=utf-8"
            headers[.xContentTypeOptions] = "nosniff"
            // The modules change with the server: a page revalidates them.
            headers[.cacheControl] = "no-cache"
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
        }
    }
}
