import Foundation
import Logging
import SyncClient
import SyncProtocol

/// `psync-client-probe`: an app reduced to its writes, for the tests that kill a client process
/// with SIGKILL (Tests/SyncClientTests/ClientKillTests.swift). Not a product.
///
/// It opens the store (signed in already), follows the partition, prints `ready` (once online
/// with `--online`), waits for a line on its standard input, then writes `--increments`
/// increments of one field one by one, printing `queued N` as soon as the N-th `write` has
/// returned: the lines it printed are the writes it promised to keep. Then it keeps uploading
/// until it is killed.
///
/// ```
/// psync-client-probe --store S.sqlite --server http://127.0.0.1:8080 --partition user=U \
///     --object User/U --path 'conversations[id=c-1].unreadCount' --increments 20 [--online]
/// ```
@main
struct ClientProbe {
    static func main() async {
        do {
            try await run(Options(CommandLine.arguments.dropFirst()))
        } catch {
            FileHandle.standardError.write(Data("psync-client-probe: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ options: Options) async throws {
        var configuration = SyncClientConfiguration(serverURL: options.server, storePath: options.store)
        configuration.reconnectDelay = .milliseconds(50)
        configuration.maximumReconnectDelay = .milliseconds(500)
        var logger = Logger(label: "psync.probe")
        logger.logLevel = ProcessInfo.processInfo.environment["PSYNC_TEST_LOG_LEVEL"].flatMap { Logger.Level(rawValue: $0) } ?? .notice
        configuration.logger = logger
        let client = try SyncClient(configuration: configuration)
        guard await client.userID != nil else { throw ProbeError("the store holds no credentials") }
        _ = try await client.open(options.partition)
        let connection = Task { await client.run() }
        defer { connection.cancel() }
        if options.online, !(await client.waitUntilOnline(timeout: .seconds(60))) {
            throw ProbeError("not online after 60 s")
        }
        say("ready")
        await readLineFromStandardInput()
        for n in 1...max(options.increments, 1) {
            try await client.write([.increment(options.object, path: options.path, by: 1)], in: options.partition)
            say("queued \(n)")
        }
        await connection.value
    }

    /// Writes a line straight to file descriptor 1 (unbuffered), so a kill right after it
    /// cannot lose it.
    static func say(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// Waits for a line on the standard input, on a thread of its own (not the concurrency pool's).
    static func readLineFromStandardInput() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                _ = readLine()
                continuation.resume()
            }
        }
    }
}

struct Options {
    var store: String
    var server: URL
    var partition: Partition
    var object: ObjectKey
    var path: Path
    var increments: Int
    var online: Bool

    init(_ arguments: ArraySlice<String>) throws {
        var values: [String: String] = [:]
        var online = false
        var rest = arguments
        while let name = rest.popFirst() {
            if name == "--online" {
                online = true
            } else if name.hasPrefix("--"), let value = rest.popFirst() {
                values[String(name.dropFirst(2))] = value
            } else {
                throw ProbeError("unexpected argument \(name)")
            }
        }
        func value(_ name: String) throws -> String {
            guard let value = values[name] else { throw ProbeError("--\(name) is required") }
            return value
        }
        let object = try value("object").split(separator: "/", maxSplits: 1).map(String.init)
        guard object.count == 2 else { throw ProbeError("--object takes Collection/id") }
        guard let server = URL(string: try value("server")), let increments = Int(try value("increments")) else {
            throw ProbeError("--server takes a URL, --increments a number")
        }
        self.store = try value("store")
        self.server = server
        self.partition = try Partition(try value("partition"))
        self.object = try ObjectKey(collection: object[0], id: object[1])
        self.path = try Path(parsing: try value("path"))
        self.increments = increments
        self.online = online
    }
}

struct ProbeError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
