import ArgumentParser
import Foundation
import Hummingbird
import HummingbirdWebSocket
import Logging
import NIOCore
import PostgresNIO
import SyncProtocol
import SyncStorage

/// The ceiling of any sync server on this stack: a process between the clients and the
/// database that does the least a server can do for an upload. It speaks just enough of the
/// protocol for the benchmark's clients (`ready`, then an `ack` per `upload`) on the same
/// libraries as `psync` (Hummingbird's WebSocket server, postgres-nio's pool), and writes each
/// upload's first `put` as one single-row INSERT transaction, the floor's statement (into the
/// floor's table, which the scenario creates first). No authentication, permissions, versions,
/// events, triggers or deliveries.
///
/// `ingest` runs it (as `psync-bench relay`, its own process like `psync serve`) to show how
/// much of the floor is left once a WebSocket hop and a server process share the machine.
struct Relay: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The least server (internal: the ingest scenario's ceiling).", shouldDisplay: false)

    @Option var port: Int
    @Option var databaseURL: String
    @Option var pool = 20

    func run() async throws {
        let logger = {
            var logger = Logger(label: "psync.bench.relay")
            logger.logLevel = .error
            return logger
        }()
        var configuration = try DatabaseURL(databaseURL).clientConfiguration
        configuration.options.maximumConnections = pool
        let client = PostgresClient(configuration: configuration, backgroundLogger: logger)

        let router = Router()
        router.get("ready") { _, _ in "ok" }
        let webSocketRouter = Router(context: BasicWebSocketRequestContext.self)
        webSocketRouter.ws("v1/sync") { inbound, outbound, _ in
            try await outbound.write(.text(ServerMessage.ready(userId: "relay").json.jsonString))
            for try await message in inbound.messages(maxSize: 1 << 20) {
                guard case .text(let text) = message,
                    case .upload(let requestId, let partition, let operations) = try ClientMessage(json: JSONParser().parse(text)),
                    case .put(_, let body)? = operations.first
                else { continue }
                let rows = try await client.query(
                    "INSERT INTO bench_floor_messages (partition, body) VALUES (\(partition.description), \(JSONValue.object(body).jsonString)::jsonb) RETURNING id",
                    logger: logger)
                var version: Int64 = 0
                for try await id in rows.decode(Int64.self) { version = id }
                let ack = ServerMessage.ack(requestId: requestId, partition: partition, cursor: Cursor(rawValue: "relay"), version: version)
                try await outbound.write(.text(ack.json.jsonString))
            }
        }
        let app = Application(
            router: router,
            server: .http1WebSocketUpgrade(webSocketRouter: webSocketRouter, configuration: .init(ws: .init(autoPing: .disabled))),
            configuration: .init(address: .hostname("127.0.0.1", port: port)),
            logger: logger)
        let parent = getppid()
        try await withThrowingDiscardingTaskGroup { group in
            group.addTask { await client.run() }
            group.addTask {
                // A benchmark stopped without stopping its relay (SIGTERM from `timeout`,
                // SIGKILL) leaves it to init: the relay ends with it rather than outliving it.
                while getppid() == parent { try await Task.sleep(for: .milliseconds(500)) }
                Foundation.exit(0)
            }
            try await app.runService()
            group.cancelAll()
        }
    }
}
