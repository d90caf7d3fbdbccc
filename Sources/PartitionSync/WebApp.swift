import Foundation

/// An application's web app: static files (HTML, ES modules, styles, images) the server
/// serves at `/app/` (`/app/` is `index.html`), beside the JavaScript SDK at `/sdk/js/`. The
/// files are read once, when the value is made; a request can name only one of them.
///
/// ```swift
/// // Package.swift: .target(name: "CouchChat", …, resources: [.copy("Web")])
/// let web = try WebApp(folder: Bundle.module.url(forResource: "Web", withExtension: nil)!)
/// SyncApplication(permissions: permissions, web: web)
/// ```
public struct WebApp: Sendable {
    /// Each file's bytes, by its path under the folder, `/`-separated (`index.html`, `css/app.css`).
    public let files: [String: [UInt8]]

    /// The files given, by path: each path is relative, `/`-separated, without `.` or `..` components.
    public init(files: [String: [UInt8]]) throws {
        for path in files.keys where !Self.isServable(path) {
            throw WebAppError(path: path, reason: "not a relative path of plain components")
        }
        self.files = files
    }

    /// Reads every regular file under `folder`, once. Symbolic links (to files or folders, in
    /// or out of the folder) and hidden files (`.name`) are left out, so nothing outside the
    /// folder is ever served.
    public init(folder: URL) throws {
        let manager = FileManager.default
        let root = folder.standardizedFileURL.resolvingSymlinksInPath().path
        var files: [String: [UInt8]] = [:]
        var pending = [""]
        while let relative = pending.popLast() {
            let directory = relative.isEmpty ? root : root + "/" + relative
            for name in try manager.contentsOfDirectory(atPath: directory).sorted() where !name.hasPrefix(".") {
                let path = relative.isEmpty ? name : relative + "/" + name
                // lstat: a link is a link, not what it points to.
                let type = try manager.attributesOfItem(atPath: root + "/" + path)[.type] as? FileAttributeType
                if type == .typeDirectory {
                    pending.append(path)
                } else if type == .typeRegular, Self.isServable(path) {
                    files[path] = Array(try Data(contentsOf: URL(fileURLWithPath: root + "/" + path)))
                }
            }
        }
        guard !files.isEmpty else { throw WebAppError(path: folder.path, reason: "no files") }
        self.files = files
    }

    /// The bytes of the file at `path` (`index.html`, `css/app.css`), or `nil` when there is none.
    public func file(at path: String) -> [UInt8]? {
        files[path]
    }

    /// Whether `path` is relative and made of plain components: no empty, `.` or `..` one,
    /// no backslash or NUL.
    package static func isServable(_ path: String) -> Bool {
        let components = path.split(separator: "/", omittingEmptySubsequences: false)
        return !components.isEmpty
            && components.allSatisfy { component in
                !component.isEmpty && component != "." && component != ".." && !component.contains("\\") && !component.contains("\0")
            }
    }
}

/// A web app's folder or file that cannot be served.
public struct WebAppError: Error, CustomStringConvertible {
    /// The path in question.
    public var path: String
    /// Why.
    public var reason: String

    public var description: String { "web app: \(path): \(reason)" }
}
