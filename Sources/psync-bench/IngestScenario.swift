import Foundation
import PostgresNIO
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

        // Client c writes as member (c / K) of conversation (c % K).
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
                    let connection = try await BenchConnection.connect(
                        environment.server.webSocketURL, token: user.token, logger: environment.logger) { sink.yield($0) }
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
                            case .ack(let id, _, _, _) where id == requestId: break answering
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
        let elapsed = started.duration(to: .now).seconds
        let rate = Double(sent) / elapsed
        progress("ingest: \(sent) messages acked, \(Int(rate))/s; waiting for the trigger")
        let catchUp = ContinuousClock.now
        try await environment.waitForTriggers()
        let catchUpSeconds = catchUp.duration(to: .now).seconds
        let lag = try await triggerLag(environment, users: (0..<conversations).map { users[$0 * members] })

        progress("ingest: the floor, single-row INSERT transactions from \(clients) tasks")
        let floor = try await Floor(client: environment.client, logger: environment.logger).inserts(concurrency: clients, seconds: seconds) { n in
            JSONValue.object(messageBody(conversation: "floor", author: "floor@bench.example", text: 200, sequence: n)).jsonString
        }
        return [
            "scenario": "ingest",
            "clients": .int(Int64(clients)), "conversations": .int(Int64(conversations)), "members": .int(Int64(members)),
            "seconds": .double(rounded(elapsed)),
            "messages": .int(Int64(sent)),
            "messagesPerSecond": .double(rounded(rate)),
            "ackLatencyMs": acks.summary,
            "triggerLagMs": lag.summary,
            "triggerCatchUpSeconds": .double(rounded(catchUpSeconds)),
            "floor": ["what": "single-row INSERT transactions/s, same concurrency", "rowsPerSecond": .double(rounded(floor))],
            "ratio": ratio(rate, floor),
            "target": "ratio >= 0.5",
        ]
    }

    /// Per message: from the commit of the message to the commit of the trigger transaction
    /// that raised the first member's unread count to include it (the n-th message of a room
    /// raises the count to n), read from the event log.
    private func triggerLag(_ environment: BenchEnvironment, users: [BenchUser]) async throws -> LatencyRecorder {
        let recorder = LatencyRecorder()
        for (k, user) in users.enumerated() {
            let partition = "conversation=ingest-\(k)"
            let rows = try await environment.client.query(
                """
                WITH messages AS (
                    SELECT row_number() OVER (ORDER BY seq) AS n, created_at FROM psync_events
                    WHERE partition = \(partition) AND collection = 'ChatMessage' AND operation = 'insert'),
                counts AS (
                    SELECT (after->'conversations'->0->>'unreadCount')::bigint AS n, min(created_at) AS created_at
                    FROM psync_events WHERE author = 'trigger:rchat.unread-counts' AND object_id = \(user.id) GROUP BY 1)
                SELECT (extract(epoch FROM c.created_at - m.created_at) * 1000000)::bigint FROM messages m JOIN counts c USING (n)
                """, logger: environment.logger)
            for try await microseconds in rows.decode(Int64.self) {
                recorder.record(nanoseconds: UInt64(max(0, microseconds)) * 1_000)
            }
        }
        return recorder
    }
}
