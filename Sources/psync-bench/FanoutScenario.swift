import Foundation
import Synchronization
import SyncProtocol
import SyncStorage
import SyncTesting

/// One room with many members online: each message's time until every member has it.
struct FanoutScenario {
    struct Parameters {
        var members = 1_000
        var messages = 100
        static let quick = Parameters(members: 20, messages: 5)
    }

    let parameters: Parameters

    init(_ parameters: Parameters) {
        self.parameters = parameters
    }

    func run(in environment: BenchEnvironment) async throws -> JSONValue {
        let (members, messages) = (parameters.members, parameters.messages)
        progress("fanout: \(messages) messages to a room of \(members) online members")
        let rssBefore = environment.serverRSS()
        let anonBefore = environment.serverAnonymousRSS()
        // The room's setup (its creation, every member's copy, every member coming online) has
        // a peak of its own, which must not grow with the room either.
        let setupPeak = MemoryPeak(environment)
        let users = try await environment.registerUsers("fanout", count: members)
        let partition = try Partition(key: "conversation", value: "fanout")
        // The room's making: from the creator's upload until every member's copy is written
        // (RChat's invitations, committed in parts) and the triggers are idle.
        let making = ContinuousClock.now
        try await environment.createConversation("fanout", name: "Fanout", members: users)
        try await environment.waitForTriggers()
        let roomMade = ContinuousClock.now - making
        // The floor first, on a quiet database (the setup's trigger work is done): run after
        // the scenario it would share the machine with the triggers still catching up.
        let floor = try await Floor(client: environment.client, logger: environment.logger)
            .notifications(rate: 10, total: messages, database: environment.database.connectionConfiguration())

        let tracker = DeliveryTracker(messages: messages, sessions: members)
        let connecting = ContinuousClock.now
        let sessions = try await connectAll(users, environment: environment) { _ in
            { message in
                guard case .changes(let batch) = message, !batch.reset else { return }
                for object in batch.objects {
                    guard let latency = nanosecondsSince(object.body?["t"]), case .string(let id)? = object.body?["_id"],
                        let n = Int(id.dropFirst("fanout-".count))
                    else { continue }
                    tracker.delivered(n, nanoseconds: latency)
                }
            }
        } subscribe: { _ in [partition] }
        // Each member coming online set off RChat's presence trigger (their User record and
        // Chatster): the messages are sent once that setup work is done.
        try await environment.waitForTriggers()
        let online = ContinuousClock.now - connecting
        let anonSetupPeak = setupPeak.stop()

        let sender = users[0]
        let connection = try await BenchConnection.connect(environment.server.webSocketURL, token: sender.token, logger: environment.logger) { _ in }
        let completion = LatencyRecorder()
        let settle = LatencyRecorder()
        var walBytes: [Int] = []
        var changedBytes: [Int] = []
        var incomplete = 0
        // The server's anonymous memory at its highest while the messages go out, sampled
        // every 20 ms (the figure after the load alone would miss a peak freed before it).
        // Its memory with every member online and idle: what the messages add to it is the
        // room's cost, which must not grow with the room (a session's own is `connections`').
        let anonSessionsUp = environment.serverAnonymousRSS()
        let peak = MemoryPeak(environment)
        for n in 0..<messages {
            let requestId = "fanout-\(n)"
            let walBefore = try await environment.walPosition()
            let started = ContinuousClock.now
            let body = messageBody(conversation: partition.value, author: sender.email, text: 200, sequence: n)
            // What the message changes, as its smallest faithful record: the message, and in each
            // member's record the unread count's path and its new value (n + 1).
            let counterChange = "conversations[id=\(partition.value)].unreadCount".utf8.count + String(n + 1).utf8.count
            changedBytes.append(JSONValue.object(body).jsonBytes.count + members * counterChange)
            connection.send(.upload(
                requestId: requestId, partition: partition,
                operations: [.put(try ObjectKey(collection: "ChatMessage", id: requestId), body: body)]))
            if await waitFor([tracker.complete[n]], timeout: .seconds(30)) {
                completion.record(started.duration(to: .now))
            } else {
                incomplete += 1
            }
            // Each message is measured on its own: RChat's unread trigger rewrites every
            // member's User record after it (1,000 records of ~80 kB in the default room), and
            // the next message is sent once that is done.
            let settling = ContinuousClock.now
            try await environment.waitForUnreadCounts()
            settle.record(settling.duration(to: .now))
            // WAL bytes of the message and everything it set off (its event, the unread
            // counts, the triggers' progress).
            walBytes.append(try await environment.walPosition() - walBefore)
            try await Task.sleep(for: .milliseconds(100))
        }
        let anonHighest = peak.stop()
        progress("fanout: p99 to all \(members): \(completion.milliseconds(at: 99)) ms")
        let rssPeak = environment.serverRSS()
        let anonPeak = environment.serverAnonymousRSS()
        await connection.close()
        await closeAll(sessions)
        // What the server keeps once the load has ended: it releases freed memory within about
        // ten seconds of its sessions falling to half their peak, and again every ten seconds
        // after, as the rest of the load's memory becomes free.
        try await Task.sleep(for: .seconds(members < 100 ? 1 : 30))
        let rssAfter = environment.serverRSS()
        let anonAfter = environment.serverAnonymousRSS()
        progress("fanout: server RSS \(megabytes(rssBefore)) MB before, \(megabytes(rssPeak)) MB under load, \(megabytes(rssAfter)) MB after")

        return [
            "scenario": "fanout",
            "members": .int(Int64(members)), "messages": .int(Int64(messages)), "incomplete": .int(Int64(incomplete)),
            "roomMadeSeconds": .double((roomMade / .milliseconds(10)).rounded() / 100),
            "membersOnlineSeconds": .double((online / .milliseconds(10)).rounded() / 100),
            "allMembersMs": completion.summary,
            "deliveryMs": tracker.latencies.summary,
            "unreadCountsSettledMs": settle.summary,
            "serverRSSMB": ["before": megabytes(rssBefore), "underLoad": megabytes(rssPeak), "afterLoad": megabytes(rssAfter)],
            "serverAnonMB": [
                "before": megabytes(anonBefore), "peakDuringSetup": megabytes(anonSetupPeak), "sessionsUp": megabytes(anonSessionsUp),
                "underLoad": megabytes(anonPeak),
                "peakDuringMessages": megabytes(anonHighest), "addedByMessages": megabytes(anonHighest - anonSessionsUp),
                "afterLoad": megabytes(anonAfter),
            ],
            "walBytesPerMessage": [
                "median": .int(Int64(walBytes.sorted()[walBytes.count / 2])), "max": .int(Int64(walBytes.max() ?? 0)),
                "perMember": .int(Int64(walBytes.sorted()[walBytes.count / 2] / max(1, members))),
                // The message's body and, per member, the unread count's path and new value.
                "changedBytes": .int(Int64(changedBytes.sorted()[changedBytes.count / 2])),
                "ratioToChanged": .double(
                    (Double(walBytes.sorted()[walBytes.count / 2]) / Double(max(1, changedBytes.sorted()[changedBytes.count / 2])) * 100).rounded() / 100),
            ],
            "method": "one message at a time: the next is sent when the unread counts of the last are written",
            "floor": ["what": "INSERT + NOTIFY → one LISTENing connection", "latencyMs": floor.summary],
            "ratioP99": ratio(completion.milliseconds(at: 99), floor.milliseconds(at: 99)),
            "target": "allMembersMs.p99 <= 100 ms",
        ]
    }
}

/// Connects a session per user, `parallel` at a time, subscribes each to its partitions and
/// returns once every subscription is up to date. `handler(index)` makes the message handler
/// of the index-th session; it sees every message, the snapshot batches too.
func connectAll(
    _ users: [BenchUser], environment: BenchEnvironment, parallel: Int = 32,
    handler: @escaping @Sendable (Int) -> @Sendable (ServerMessage) -> Void,
    subscribe: @escaping @Sendable (Int) -> [Partition]
) async throws -> [BenchConnection] {
    let started = ContinuousClock.now
    return try await withThrowingTaskGroup(of: (Int, BenchConnection).self) { group in
        var sessions: [BenchConnection?] = Array(repeating: nil, count: users.count)
        var next = 0
        var done = 0
        func add() {
            let index = next
            next += 1
            group.addTask {
                let partitions = subscribe(index)
                let upToDate = Counter()
                let ready = Once<Void>()
                let inner = handler(index)
                let connection = try await BenchConnection.connect(
                    environment.server.webSocketURL, token: users[index].token, logger: environment.logger
                ) { message in
                    if case .changes(let batch) = message, batch.upToDate, upToDate.increment() == partitions.count { ready.set(()) }
                    if case .error(let error, _) = message { progress("session \(index): \(error)") }
                    inner(message)
                }
                for partition in partitions { connection.send(.subscribe(partition: partition, cursor: nil)) }
                guard await waitFor([ready], timeout: .seconds(120)) else { throw BenchError("session \(index) never got up to date") }
                return (index, connection)
            }
        }
        while next < min(parallel, users.count) { add() }
        while let (index, connection) = try await group.next() {
            sessions[index] = connection
            done += 1
            if done % 1_000 == 0 { progress("\(done) sessions up to date (\(started.duration(to: .now)))") }
            if next < users.count { add() }
        }
        return sessions.compactMap { $0 }
    }
}

/// Closes sessions, many at a time.
func closeAll(_ sessions: [BenchConnection]) async {
    await withTaskGroup(of: Void.self) { group in
        for session in sessions { group.addTask { await session.close() } }
    }
}
