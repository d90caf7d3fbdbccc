import Foundation
import Testing

/// What docs/APPS.md promises an application: it depends on this package like on any other,
/// by path or by version. SwiftPM refuses a dependency taken by version whose manifest uses
/// unsafe flags, so no target here may (`SyncTesting` was built with `-Onone` around an
/// optimizer crash of an earlier Swift).
@Suite("Package manifests")
struct PackageManifestTests {
    @Test("no manifest of the package or its examples uses unsafe flags")
    func noUnsafeFlags() throws {
        let root = DocumentationExcerptTests.root
        for manifest in ["Package.swift", "Examples/CouchChat/Package.swift", "Examples/TouchWiki/Package.swift"] {
            let text = try String(contentsOf: root.appendingPathComponent(manifest), encoding: .utf8)
            #expect(!text.contains("unsafeFlags"), "\(manifest) uses unsafe flags")
        }
    }

    @Test("the application API is a leaf: its module depends on the protocol, the lock and the logger, nothing of the engine")
    func applicationAPIIsALeaf() throws {
        let root = DocumentationExcerptTests.root
        let allowed: Set<String> = ["Foundation", "Locking", "Logging", "SyncProtocol"]
        let manifest = try String(contentsOf: root.appendingPathComponent("Package.swift"), encoding: .utf8)
        let target = try #require(manifest.range(of: "name: \"PartitionSync\",\n            dependencies: ["))
        let list = manifest[target.upperBound...].prefix { $0 != "]" }
        let named = list.split(separator: "\n").compactMap { line -> String? in
            let text = line.trimmingCharacters(in: .whitespaces)
            guard !text.hasPrefix("//"), let quote = text.firstIndex(of: "\"") else { return nil }
            return String(text[text.index(after: quote)...].prefix { $0 != "\"" })
        }
        #expect(Set(named).isSubset(of: ["Locking", "SyncProtocol", "Logging"]), "PartitionSync depends on \(named)")
        let sources = root.appendingPathComponent("Sources/PartitionSync")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var checked = 0
        for case let file as URL in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n") {
                let words = line.split(separator: " ")
                guard let at = words.firstIndex(of: "import"), at + 1 < words.count, words[..<at].allSatisfy({ $0.hasPrefix("@") }) else { continue }
                let module = String(words[at + 1])
                #expect(allowed.contains(module), "\(file.lastPathComponent) imports \(module)")
            }
            checked += 1
        }
        #expect(checked > 10)
    }
}
