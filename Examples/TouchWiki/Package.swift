// swift-tools-version:6.2
import PackageDescription

// TouchWiki, the Couchbase Lite wiki demo, as an application of PartitionSync: its own
// package, built only on PartitionSync's public API (docs/APPS.md).
let package = Package(
    name: "TouchWiki",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "TouchWiki", targets: ["TouchWiki"]),
        .library(name: "TouchWikiClient", targets: ["TouchWikiClient"]),
        .executable(name: "touchwiki-server", targets: ["touchwiki-server"]),
        .executable(name: "touchwiki", targets: ["touchwiki"]),
    ],
    dependencies: [
        // PartitionSync is this repository, two folders up; a package of yours names its checkout (docs/APPS.md).
        .package(name: "PartitionSync", path: "../.."),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        // The model, rules, validator, triggers and indexes, and the web app (`Web`, served at /app/).
        .target(
            name: "TouchWiki",
            dependencies: [.product(name: "PartitionSync", package: "PartitionSync")],
            resources: [.copy("Web")]
        ),
        // The server: `PartitionSyncCommand` serving TouchWiki.
        .executableTarget(
            name: "touchwiki-server",
            dependencies: ["TouchWiki", .product(name: "PartitionSyncServer", package: "PartitionSync")]
        ),
        // The client: TouchWiki on the Swift SDK (`SyncClient`), drafts included.
        .target(
            name: "TouchWikiClient",
            dependencies: [
                "TouchWiki", .product(name: "SyncClient", package: "PartitionSync"),
                .product(name: "SyncProtocol", package: "PartitionSync"),
            ]
        ),
        // `touchwiki`, the terminal client.
        .executableTarget(
            name: "touchwiki",
            dependencies: ["TouchWikiClient", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(
            name: "TouchWikiTests",
            dependencies: ["TouchWiki", "TouchWikiClient", .product(name: "SyncTesting", package: "PartitionSync")]
        ),
    ]
)
