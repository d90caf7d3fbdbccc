import Foundation
import PartitionSync
import SyncProtocol
import SyncServer
import SyncTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// An application's web app at `/app/`: its files with their types and policy, nothing else.
@Suite("Web app routes", .timeLimit(.minutes(30)))
struct WebAppRoutesTests {
    static let policy =
        "default-src 'self'; script-src 'self'; connect-src 'self' ws: wss:; img-src 'self' blob: data:; "
        + "style-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"

    /// A web app folder with a page, a module, a style sheet in a subfolder and an icon; beside
    /// them a hidden file, a link to a file outside and a link to a folder outside.
    static func makeFolder() throws -> URL {
        let folder = try TestScratch.folder("webapp")
        let outside = try TestScratch.folder("outside")
        try FileManager.default.createDirectory(at: folder.appendingPathComponent("css"), withIntermediateDirectories: true)
        try Data("<!doctype html><title>web app</title><script type=module src=/app/main.js></script>".utf8)
            .write(to: folder.appendingPathComponent("index.html"))
        try Data("import '/sdk/js/index.js';".utf8).write(to: folder.appendingPathComponent("main.js"))
        try Data("body { margin: 0 }".utf8).write(to: folder.appendingPathComponent("css/app.css"))
        try Data("<svg xmlns='http://www.w3.org/2000/svg'/>".utf8).write(to: folder.appendingPathComponent("icon.svg"))
        try Data("hidden".utf8).write(to: folder.appendingPathComponent(".env"))
        try Data("secret".utf8).write(to: outside.appendingPathComponent("secret.txt"))
        try FileManager.default.createSymbolicLink(
            at: folder.appendingPathComponent("leak.txt"), withDestinationURL: outside.appendingPathComponent("secret.txt"))
        try FileManager.default.createSymbolicLink(at: folder.appendingPathComponent("outside"), withDestinationURL: outside)
        return folder
    }

    @Test("a folder gives its regular files only: no hidden file, no link to a file or folder outside it")
    func readsRegularFilesOnly() throws {
        let folder = try Self.makeFolder()
        let web = try WebApp(folder: folder)
        #expect(Set(web.files.keys) == ["index.html", "main.js", "css/app.css", "icon.svg"])
        #expect(web.file(at: "css/app.css") == Array("body { margin: 0 }".utf8))
        #expect(throws: WebAppError.self) { try WebApp(files: ["../secret.txt": []]) }
        #expect(throws: WebAppError.self) { try WebApp(files: ["a//b.js": []]) }
    }

    @Test("/app/ serves index.html and each file typed, with the policy; traversal and unknown paths are 404; / redirects")
    func servesTheApp() async throws {
        let web = try WebApp(folder: try Self.makeFolder())
        try await TestDatabase.with { db in
            try await TestServer.with(database: db, application: SyncApplication(permissions: TestServer.defaultPermissions, web: web)) { server in
                let index = try await server.http.get("/app/")
                #expect(index.status == 200)
                #expect(index.text.contains("<title>web app</title>"))
                #expect(index.headers["content-type"] == "text/html; charset=utf-8")
                #expect(index.headers["content-security-policy"] == Self.policy)
                #expect(index.headers["x-content-type-options"] == "nosniff")
                #expect(index.headers["cache-control"] == "no-cache")

                for (path, type) in [
                    ("/app/main.js", "text/javascript; charset=utf-8"), ("/app/css/app.css", "text/css; charset=utf-8"),
                    ("/app/icon.svg", "image/svg+xml"), ("/app/index.html", "text/html; charset=utf-8"),
                ] {
                    let file = try await server.http.get(path)
                    #expect(file.status == 200, "\(path)")
                    #expect(file.headers["content-type"] == type, "\(path)")
                    #expect(file.headers["content-security-policy"] == Self.policy, "\(path)")
                }

                let unknown = try await server.http.get("/app/nothing.js")
                #expect(unknown.status == 404)
                #expect(unknown.json?["error"]?["code"]?.stringValue == "not_found")

                // Sent as written (URLSession would resolve the dots): plain, encoded, an
                // encoded slash, a link out, a hidden file.
                for path in [
                    "/app/../Package.swift", "/app/css/../../etc/passwd", "/app/%2e%2e/index.html", "/app/css/%2E%2E/main.js",
                    "/app/css%2f..%2fmain.js", "/app/..%2f..%2fetc/passwd", "/app/leak.txt", "/app/outside/secret.txt", "/app/.env",
                ] {
                    let answer = try await Self.rawGet(port: server.port, path: path)
                    #expect(answer.status == 404, "\(path)")
                    #expect(answer.text.contains("\"not_found\""), "\(path)")
                }

                let root = try await Self.rawGet(port: server.port, path: "/")
                #expect(root.status == 302)
                #expect(root.text.lowercased().contains("location: /app/\r\n"))
                let bare = try await Self.rawGet(port: server.port, path: "/app")
                #expect(bare.status == 302)
                #expect(bare.text.lowercased().contains("location: /app/\r\n"))
            }
        }
    }

    @Test("an application without a web app has no /app/, and / stays 404")
    func noWebApp() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: TestServer.defaultPermissions) { (server: TestServer) async throws -> Void in
                #expect(try await server.http.get("/app/").status == 404)
                #expect(try await Self.rawGet(port: server.port, path: "/app").status == 404)
                #expect(try await Self.rawGet(port: server.port, path: "/app/index.html").status == 404)
                #expect(try await Self.rawGet(port: server.port, path: "/").status == 404)
                #expect(try await server.http.get("/sdk/js/index.js").status == 200)
            }
        }
    }

    /// The answer (status and raw text) to `GET path` sent on a socket exactly as written.
    static func rawGet(port: Int, path: String) async throws -> (status: Int, text: String) {
        try await RawHTTP.exchange(port: port, request: "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    }
}
