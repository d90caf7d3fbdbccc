import Foundation
import Locking
import SyncProtocol
import SyncStorage
import SyncTesting

/// One sender at a fixed rate, the other members of the room subscribed: the time from the
/// upload being sent to its delivery at each subscriber.
struct LatencyScenario {
    struct Parameters {
        var rate = 1_000
        var subscribers = 9
        static let quick = Parameters(rate: 200, subscribers: 3)
    }

    let parameters: Parameters
    let seconds: Int

    init(_ parameters: Parameters, seconds: Int) {
        self.parameters = parameters
        self.seconds = seconds
    }

    func run(in environment: BenchEnvironment) async throws -> JSONValue {
        let (rate, subscribers) = (parameters.rate, parameters.subscribers)
        let total = rate * seconds
        progress("latency: \(rate) msg/s for \(seconds) s to \(subscribers) subscribers")
        let users = try await environment.registerUsers("latency", count: subscribers + 1)
        let partition = try Partition(key: "conversation", value: "latency")
        try await environment.createConversation("latency", name: "Latency", members: users)
        try await environment.waitForTriggers()
        // The floor first, on a quiet database (the setup's trigger work is done): run after
        // the scenario it would share the machine with the triggers still catching up.
        progress("latency: the floor, INSERT + NOTIFY at \(rate)/s to one listener")
        let floor = try await Floor(client: environment.client, logger: environment.logger)
            .notifications(rate: rate, total: total, database: environment.database.connectionConfiguration())

        let deliveries = LatencyRecorder()
        let delivered = Counter()
        let allDelivered = Once<Void>()
        var sessions: [BenchConnection] = []
        for user in users.dropFirst() {
            let upToDate = Once<Void>()
            sessions.append(try await BenchConnection.connect(environment.server.webSocketURL, token: user.token, logger: environment.logger) { message in
                guard case .changes(let batch) = message else { return }
                if batch.upToDate { upToDate.set(()) }
                guard !batch.reset else { return }
                for object in batch.objects {
                    guard let latency = nanosecondsSince(object.body?["t"]) else { continue }
                    deliveries.record(nanoseconds: latency)
                    if delivered.increment() == total * subscribers { allDelivered.set(()) }
                }
            })
            sessions.last!.send(.subscribe(partition: partition, cursor: nil))
            await upToDate.value
        }

        let sender = users[0]
        let acks = LatencyRecorder()
        let sentAt = Locked<[String: ContinuousClock.Instant]>([:])
        let acked = Counter()
        let allAcked = Once<Void>()
        let connection = try await BenchConnection.connect(environment.server.webSocketURL, token: sender.token, logger: environment.logger) { message in
            guard case .ack(let requestId, _, _, _) = message, let sent = sentAt.withLock({ $0.removeValue(forKey: requestId) }) else { return }
            acks.record(sent.duration(to: .now))
            if acked.increment() == total { allAcked.set(()) }
        }
        let started = ContinuousClock.now
        try await paced(rate: rate, count: total) { n in
            let requestId = "latency-\(n)"
            let body = messageBody(conversation: partition.value, author: sender.email, text: 200, sequence: n)
            sentAt.withLock { $0[requestId] = .now }
            connection.send(.upload(requestId: requestId, partition: partition, operations: [.put(try ObjectKey(collection: "ChatMessage", id: requestId), body: body)]))
        }
        let sending = started.duration(to: .now).seconds
        let complete = await waitFor([allAcked, allDelivered], timeout: .seconds(60))
        progress("latency: sent \(total) in \(rounded(sending)) s; \(acked.current) acked, \(delivered.current) of \(total * subscribers) delivered")
        await connection.close()
        for session in sessions { await session.close() }

        return [
            "scenario": "latency",
            "rate": .int(Int64(rate)), "subscribers": .int(Int64(subscribers)), "messages": .int(Int64(total)),
            "achievedRate": .double(rounded(Double(total) / sending)),
            "complete": .bool(complete),
            "deliveryLatencyMs": deliveries.summary,
            "ackLatencyMs": acks.summary,
            "floor": ["what": "INSERT + NOTIFY in one transaction → LISTEN, same rate", "latencyMs": floor.summary],
            "ratioP50": ratio(deliveries.milliseconds(at: 50), floor.milliseconds(at: 50)),
            "ratioP99": ratio(deliveries.milliseconds(at: 99), floor.milliseconds(at: 99)),
            "target": "p50 <= 5 ms, p99 <= 20 ms",
        ]
    }
}

/// Waits until every one is set, or the timeout; whether all were set.
func waitFor(_ onces: [Once<Void>], timeout: Duration) async -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if onces.allSatisfy(\.isSet) { return true }
        try? await Task.sleep(for: .milliseconds(5))
    }
    return onces.allSatisfy(\.isSet)
}
