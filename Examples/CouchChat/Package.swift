// swift-tools-version:6.2
import PackageDescription

// CouchChat, the Couchbase Sync Gateway demo, as an application of PartitionSync: its own
// package, built only on PartitionSync's public API (docs/APPS.md).
let package = Package(
    name: "CouchChat",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "CouchChat", targets: ["CouchChat"]),
        .executable(name: "couchchat-server", targets: ["couchchat-server"]),
        .executable(name: "couchchat", targets: ["couchchat"]),
    ],
    dependencies: [
        // PartitionSync is this repository, two folders up; a package of yours names its checkout (docs/APPS.md).
        .package(name: "PartitionSync", path: "../.."),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        // The model, rules, validator, triggers and indexes, and the web app (`Web`, served at /app/).
        .target(
            name: "CouchChat",
            dependencies: [.product(name: "PartitionSync", package: "PartitionSync")],
            resources: [.copy("Web")]
        ),
        // The server: `PartitionSyncCommand` serving CouchChat.
        .executableTarget(
            name: "couchchat-server",
            dependencies: ["CouchChat", .product(name: "PartitionSyncServer", package: "PartitionSync")]
        ),
        // The client: CouchChat on the Swift SDK (`SyncClient`).
        .target(
            name: "CouchChatClient",
            dependencies: [
                "CouchChat", .product(name: "SyncClient", package: "PartitionSync"),
                .product(name: "SyncProtocol", package: "PartitionSync"),
            ]
        ),
        // `couchchat`, the terminal client.
        .executableTarget(
            name: "couchchat",
            dependencies: ["CouchChatClient", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        .testTarget(
            name: "CouchChatTests",
            dependencies: ["CouchChat", "CouchChatClient", .product(name: "SyncTesting", package: "PartitionSync")]
        ),
    ]
)
