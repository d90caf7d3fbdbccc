// swift-tools-version:6.2
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "PartitionSync",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "psync", targets: ["psync"]),
        .executable(name: "rchat", targets: ["rchat"]),
        .executable(name: "psync-bench", targets: ["psync-bench"]),
        // What an application is written against (docs/APPS.md): rules, validators,
        // triggers, indexes, `SyncApplication`, and the protocol's types.
        .library(name: "PartitionSync", targets: ["PartitionSync"]),
        // The whole server command of an application: `PartitionSyncCommand.main(application:)`.
        .library(name: "PartitionSyncServer", targets: ["PartitionSyncServer"]),
        // The test kit: a database per test, servers in-process or as processes, clients.
        .library(name: "SyncTesting", targets: ["SyncTesting"]),
        // The client SDK and the protocol types it is built on.
        .library(name: "SyncClient", targets: ["SyncClient"]),
        .library(name: "SyncProtocol", targets: ["SyncProtocol"]),
        // RChat, the reference application: its model for clients, its back end.
        .library(name: "RChatModel", targets: ["RChatModel"]),
        .library(name: "RChat", targets: ["RChat"]),
    ],
    dependencies: [
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-collections.git", from: "1.6.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.3"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
    ],
    targets: [
        // The one lock of every module: Synchronization.Mutex, or an NSLock in a build for the
        // thread sanitizer (-DPSYNC_TSAN), which does not see Mutex's futex calls.
        .target(name: "Locking", swiftSettings: swiftSettings),
        // Pure types and logic of the wire contract: no I/O. The client SDK depends only on this.
        .target(
            name: "SyncProtocol",
            swiftSettings: swiftSettings
        ),
        // The storage engine on PostgreSQL: migrations, objects, cursors, operation batches.
        .target(
            name: "SyncStorage",
            dependencies: [
                "Locking",
                // The engine implements the application API's reader and writer protocols.
                "PartitionSync",
                "SyncProtocol",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                // Only for ConnectionPoolError, to tell an unreachable database by its code.
                .product(name: "_ConnectionPoolModule", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
                // Periodic work ends with the service group's graceful shutdown.
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                // Which replica serves the pages (ReadReplicas).
                .product(name: "Metrics", package: "swift-metrics"),
            ],
            resources: [.copy("Migrations")],
            swiftSettings: swiftSettings
        ),
        // A private PostgreSQL cluster started from the installed server binaries.
        .target(
            name: "EmbeddedPostgres",
            dependencies: [
                "Locking",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // The application API: permission rules, write validators, triggers and their
        // contexts, typed helpers, `SyncApplication`. A leaf: the protocol's types, the lock
        // and the logger, nothing of storage, PostgreSQL or HTTP; the engine implements its
        // reader and writer protocols, the test kit implements them in memory.
        .target(
            name: "PartitionSync",
            dependencies: [
                "Locking",
                "SyncProtocol",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Durable server-side triggers: the event sequencer and the trigger runners.
        .target(
            name: "SyncTriggers",
            dependencies: [
                "Locking",
                "PartitionSync",
                "SyncProtocol",
                "SyncStorage",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // `psync import`'s core: MongoDB's exports (mongoexport Extended JSON, mongodump BSON,
        // gzip'd or not) read a document at a time, and their values mapped to JSON.
        .target(
            name: "SyncImport",
            dependencies: [
                "SyncProtocol",
                .product(name: "CompressNIO", package: "compress-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The JavaScript client SDK (Clients/js, plain ES modules): its files, for the server to
        // serve under /sdk/js/.
        .target(
            name: "WebClient",
            path: "Clients/js",
            exclude: ["README.md", "package.json", "tsconfig.json", "scripts", "test"],
            sources: ["swift"],
            resources: [.copy("src")],
            swiftSettings: swiftSettings
        ),
        // The sync server: authentication, permissions, the WebSocket and HTTP protocol, live push.
        .target(
            name: "SyncServer",
            dependencies: [
                "Locking",
                "PartitionSync",
                "WebClient",
                "SyncProtocol",
                "SyncStorage",
                "SyncTriggers",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOWebSocket", package: "swift-nio"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "DequeModule", package: "swift-collections"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        // RChat's data model, for the server and for clients alike.
        .target(
            name: "RChatModel",
            dependencies: ["SyncProtocol"],
            swiftSettings: swiftSettings
        ),
        // The RChat back end: the reference application, kept out of the engine's modules.
        .target(
            name: "RChat",
            dependencies: ["Locking", "RChatModel", "PartitionSync"],
            swiftSettings: swiftSettings
        ),
        // The client SDK: sessions, partitions as live collections, an offline SQLite store and
        // upload queue. Depends only on the protocol module, Foundation and a WebSocket client.
        .target(
            name: "SyncClient",
            dependencies: [
                "SyncProtocol",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "Logging", package: "swift-log"),
                // SHA-256 of blobs (CryptoKit on Apple platforms).
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The harness every test suite uses: one embedded cluster per process, a database per test.
        .target(
            name: "SyncTesting",
            dependencies: [
                "Locking",
                "PartitionSync",
                "SyncStorage",
                "SyncServer",
                "SyncTriggers",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                "EmbeddedPostgres",
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        // The server command as a library: what `psync` and every application's server run.
        .target(
            name: "PartitionSyncServer",
            dependencies: [
                "Locking",
                "PartitionSync",
                "SyncImport",
                "SyncStorage",
                "SyncServer",
                "SyncTriggers",
                "EmbeddedPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                // SHA-256 of the blobs an import stores.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // `psync`: the server command serving RChat.
        .executableTarget(
            name: "psync",
            dependencies: ["PartitionSyncServer", "RChat", "SyncProtocol"],
            swiftSettings: swiftSettings
        ),
        // The terminal chat client, built on the SDK.
        .executableTarget(
            name: "rchat",
            dependencies: [
                "SyncClient",
                "RChatModel",
                "SyncProtocol",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // Test-only (no product): a client process that ClientKillTests kills with SIGKILL.
        .executableTarget(
            name: "psync-client-probe",
            dependencies: ["SyncClient", "SyncProtocol", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        // The benchmarks: a server process, real WebSocket clients, and the raw PostgreSQL floor.
        .executableTarget(
            name: "psync-bench",
            dependencies: [
                "Locking",
                "SyncProtocol",
                "SyncStorage",
                "SyncServer",
                "SyncTesting",
                "RChatModel",
                "EmbeddedPostgres",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SyncProtocolTests",
            dependencies: ["SyncProtocol", "SyncTesting"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EmbeddedPostgresTests",
            dependencies: ["Locking", "EmbeddedPostgres", "SyncTesting", "SyncStorage", "SyncProtocol"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SyncTriggersTests",
            dependencies: [
                "Locking",
                "SyncTriggers", "PartitionSync", "SyncTesting", "SyncStorage", "SyncProtocol",
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "RChatTests",
            dependencies: [
                "Locking",
                "RChat", "PartitionSync", "SyncServer", "SyncTriggers", "SyncTesting", "SyncStorage", "SyncProtocol", "EmbeddedPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SyncClientTests",
            dependencies: [
                "Locking",
                "SyncClient", "SyncTesting", "PartitionSync", "SyncServer", "SyncStorage", "SyncProtocol", "RChat",
                // To damage a client's store in the test of store failures.
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        // Runs the `rchat` executable (built with the tests) as separate processes.
        .testTarget(
            name: "RChatCLITests",
            dependencies: ["Locking", "SyncTesting", "SyncProtocol", "SyncStorage"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SyncServerTests",
            dependencies: [
                "Locking",
                "SyncServer", "PartitionSync", "SyncTesting", "SyncStorage", "SyncProtocol", "SyncTriggers", "EmbeddedPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                // An identity provider's keys and its JWKS endpoint, in the identity tests.
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Hummingbird", package: "hummingbird"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SyncImportTests",
            dependencies: ["SyncImport", "SyncProtocol", "SyncTesting"],
            // Read in place (by #filePath), never bundled.
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        // `import` against a real database: RChat's export in every format, refusals, users,
        // and a real `psync import` process killed midway and resumed.
        .testTarget(
            name: "ImportTests",
            dependencies: [
                "Locking", "PartitionSyncServer", "SyncImport", "SyncTesting", "RChat", "PartitionSync", "SyncServer", "SyncStorage",
                "SyncProtocol", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The code blocks of README.md, docs/ and the examples' READMEs are excerpts of compiled code.
        .testTarget(
            name: "DocsTests",
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "SyncStorageTests",
            dependencies: [
                "Locking",
                "SyncStorage", "SyncTesting", "EmbeddedPostgres", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
