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
}
