import Foundation
import Locking
import PostgresNIO
import RChatModel
import SyncProtocol
import SyncTesting

/// C clients send chat messages into K conversations of M members as fast as their acks
/// return, with RChat's unread-count trigger raising M counts per message.
struct IngestScenario {
    struct Parameters {
        var clients = 8
        var conversations = 8
        var members = 10
        static let quick = Parameters(clients: 4, conversations: 2, members: 3)
    }

    let parameters: Parameters
    let seconds: Int

    init(_ parameters: Parameters, seconds: Int) {
        self.parameters = parameters
        self.seconds = seconds
    }

    func run(in environment: BenchEnvironment) async throws -> JSONValue {
        let (clients, conversations, members) = (parameters.clients, parameters.conversations, parameters.members)
        progress("ingest: \(clients) clients, \(conversations) conversations of \(members) members, \(seconds) s")
        let users = try await environment.registerUsers("ingest", count: conversations * members)
        for k in 0..<conversations {
            try await environment.createConversation(
                "ingest-\(k)", name: "Ingest \(k)", members: Array(users[(k * members)..<((k + 1) * members)]))
        }
        try await environment.waitForTriggers()

        // In each room, the last member's device watches its User record: when it shows an
        // unread count of n, the room's n-th message (in commit order) has been counted.
        let counts = UnreadCountWatch(rooms: conversations)
        var watchers: [BenchConnection] = []
        for k in 0..<conversations {
            let member = users[k * members + members - 1]
            let room = JSONValue.string("ingest-\(k)")
            let upToDate = Once<Void>()
            let watcher = try await BenchConnection.connect(environment.server.webSocketURL, token: member.token, logger: environment.logger) { message in
                guard case .changes(let batch) = message else { return }
                if batch.upToDate { upToDate.set(()) }
                for object in batch.objects where object.key.collection == "User" {
                    let conversation = object.body?["conversations"]?.arrayValue?.first { $0["id"] == room }
                    if let count = conversation?["unreadCount"]?.intValue { counts.observed(room: k, count: Int(count)) }
                }
            }
            watcher.send(.subscribe(partition: RChatPartitions.user(member.id), cursor: nil))
            await upToDate.value
            watchers.append(watcher)
        }

        let (sent, elapsed, acks) = try await send(to: environment.server.webSocketURL, as: users, in: environment) { conversation, version in
            counts.acked(room: conversation, version: version)
        }
        let rate = Double(sent) / elapsed
        progress("ingest: \(sent) messages acked, \(Int(rate))/s; waiting for the trigger")
        // The unread trigger's catch-up, then every trigger's stored position: a trigger that
        // matches none of the events passes them over in memory and stores how far only when
        // it renews its lease (every second), so the second figure has that much more in it.
        let catchUp = ContinuousClock.now
        try await environment.waitForUnreadCounts(timeout: .seconds(600))
        let unreadCatchUpSeconds = catchUp.duration(to: .now).seconds
        try await environment.waitForTriggers()
        let catchUpSeconds = catchUp.duration(to: .now).seconds
        _ = await waitFor([counts.complete], timeout: .seconds(30))
        for watcher in watchers { await watcher.close() }
        let lag = counts.lags()

        progress("ingest: the floor, single-row INSERT transactions from \(clients) tasks")
        let floor = try await Floor(client: environment.client, logger: environment.logger).inserts(concurrency: clients, seconds: seconds) { n in
            JSONValue.object(messageBody(conversation: "floor", author: "floor@bench.example", text: 200, sequence: n)).jsonString
        }

        // The ceiling: the same clients against the least server (``Relay``).
        progress("ingest: the ceiling, the same clients against a relay that only inserts and acks")
        let pool = environment.server.environment["PSYNC_DB_POOL"] ?? "20"
        let relay = try ServerProcess(database: environment.database, executable: Self.thisExecutable, command: ["relay", "--pool", pool])
        try await relay.start(timeout: .seconds(60))
        let ceiling: (sent: Int, elapsed: Double, acks: LatencyRecorder)
        do {
            ceiling = try await send(to: relay.webSocketURL, as: users, in: environment) { _, _ in }
        } catch {
            _ = await relay.stop()
            throw error
        }
        _ = await relay.stop()
        let ceilingRate = Double(ceiling.sent) / ceiling.elapsed
        return [
            "scenario": "ingest",
            "clients": .int(Int64(clients)), "conversations": .int(Int64(conversations)), "members": .int(Int64(members)),
            "seconds": .double(rounded(elapsed)),
            "messages": .int(Int64(sent)),
            "messagesPerSecond": .double(rounded(rate)),
            "ackLatencyMs": acks.summary,
            "triggerLagMs": lag.summary,
            "triggerLagWhat": "ack of a message → a member's device receives the unread count that includes it",
            "unreadCatchUpSeconds": .double(rounded(unreadCatchUpSeconds)),
            "triggerCatchUpSeconds": .double(rounded(catchUpSeconds)),
            "catchUpWhat": "after the senders stopped: the unread trigger's position at the last message; every trigger's stored position at the log's end",
            "floor": ["what": "single-row INSERT transactions/s, same concurrency", "rowsPerSecond": .double(rounded(floor))],
            "ratio": ratio(rate, floor),
            "target": "ratio >= 0.5",
            "ceiling": [
                "what": "the same clients against a relay process that only inserts each upload (one single-row INSERT transaction) and acks it",
                "messagesPerSecond": .double(rounded(ceilingRate)),
                "ackLatencyMs": ceiling.acks.summary,
                "ratio": ratio(ceilingRate, floor),
            ],
        ]
    }

    /// Client c writes as member (c / K) of conversation (c % K), one upload in flight, until
    /// the phase's seconds are over: messages acked, seconds taken, ack latencies.
    private func send(
        to url: String, as users: [BenchUser], in environment: BenchEnvironment,
        acked: @escaping @Sendable (_ conversation: Int, _ version: Int64) -> Void
    ) async throws -> (sent: Int, elapsed: Double, acks: LatencyRecorder) {
        let (clients, conversations, members) = (parameters.clients, parameters.conversations, parameters.members)
        let acks = LatencyRecorder()
        let deadline = ContinuousClock.now + .seconds(seconds)
        let started = ContinuousClock.now
        let sent = try await withThrowingTaskGroup(of: Int.self) { group in
            for c in 0..<clients {
                let conversation = c % conversations
                let user = users[conversation * members + (c / conversations) % members]
                let partition = try Partition(key: "conversation", value: "ingest-\(conversation)")
                group.addTask {
                    let (inbox, sink) = AsyncStream.makeStream(of: ServerMessage.self)
                    let connection = try await BenchConnection.connect(url, token: user.token, logger: environment.logger) { sink.yield($0) }
                    var answers = inbox.makeAsyncIterator()
                    var count = 0
                    while ContinuousClock.now < deadline {
                        let requestId = "ingest-\(c)-\(count)"
                        let key = try ObjectKey(collection: "ChatMessage", id: requestId)
                        let body = messageBody(conversation: partition.value, author: user.email, text: 200, sequence: count)
                        let sentAt = ContinuousClock.now
                        connection.send(.upload(requestId: requestId, partition: partition, operations: [.put(key, body: body)]))
                        answering: while let answer = await answers.next() {
                            switch answer {
                            case .ack(let id, _, _, let version) where id == requestId:
                                acked(conversation, version ?? 0)
                                break answering
                            case .rejected(let id, _, let error, _) where id == requestId: throw BenchError("ingest upload refused: \(error)")
                            case .error(let error, _): throw BenchError("ingest: \(error)")
                            default: continue
                            }
                        }
                        acks.record(sentAt.duration(to: .now))
                        count += 1
                    }
                    await connection.close()
                    return count
                }
            }
            return try await group.reduce(0, +)
        }
        return (sent, started.duration(to: .now).seconds, acks)
    }

    /// This executable (the relay runs as its subcommand).
    private static var thisExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

}

/// When each room's messages were acked, and when a member's device first showed the unread
/// count that includes each: the trigger's lag as a user sees it (ack → count delivered).
final class UnreadCountWatch: Sendable {
    private struct Room {
        /// Acks: (partition version, when); the n-th by version is the n-th message.
        var acks: [(version: Int64, at: ContinuousClock.Instant)] = []
        /// When the count first reached n, for n = 1, 2, …
        var shown: [ContinuousClock.Instant] = []
    }

    private let rooms: Locked<[Room]>
    let complete = Once<Void>()

    init(rooms: Int) {
        self.rooms = Locked(Array(repeating: Room(), count: rooms))
    }

    func acked(room: Int, version: Int64) {
        rooms.withLock { $0[room].acks.append((version, .now)) }
    }

    func observed(room: Int, count: Int) {
        let done = rooms.withLock { rooms -> Bool in
            let now = ContinuousClock.now
            while rooms[room].shown.count < count { rooms[room].shown.append(now) }
            return rooms.allSatisfy { $0.shown.count >= $0.acks.count && !$0.acks.isEmpty }
        }
        if done { complete.set(()) }
    }

    /// Per message counted: from its ack to the delivery of the count that includes it.
    func lags() -> LatencyRecorder {
        let recorder = LatencyRecorder()
        rooms.withLock { rooms in
            for room in rooms {
                for (acked, shown) in zip(room.acks.sorted { $0.version < $1.version }, room.shown) {
                    recorder.record(acked.at < shown ? acked.at.duration(to: shown) : .zero)
                }
            }
        }
        return recorder
    }
}
