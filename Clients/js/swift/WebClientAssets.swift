import Foundation

/// The JavaScript client SDK's modules (`Clients/js/src`), as every server serves them under
/// `/sdk/js/` (docs/CLIENT.md, "JavaScript"): read once from this target's bundle, by their
/// path under `src`, so a request can name only a file that is there.
package enum WebClientAssets {
    /// Each module's text, by its path under `src` (`index.js`, `logic/Outbox.js`).
    package static let files: [String: Data] = {
        guard let root = Bundle.module.url(forResource: "src", withExtension: nil) else { return [:] }
        var files: [String: Data] = [:]
        let base = root.standardizedFileURL.path
        guard let walker = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) else { return [:] }
        for case let url as URL in walker where url.pathExtension == "js" {
            let path = url.standardizedFileURL.path
            guard path.hasPrefix(base + "/"), let data = try? Data(contentsOf: url) else { continue }
            files[String(path.dropFirst(base.count + 1))] = data
        }
        return files
    }()
}
