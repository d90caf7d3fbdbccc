import Foundation
import Locking
import RChatModel
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting

/// Mixed load for a long time, with sessions opening and closing all along: messages into
/// rooms at a steady rate, members coming and going (each session subscribes to its user
/// partition, the Chatsters and its rooms), HTTP pulls. Every sampling interval it reports the
/// server's RSS, open file descriptors, sessions, subscriptions and the subscription hub's
/// sizes; after the load it waits and samples again: everything must return near its baseline.
struct SoakScenario {
    struct Parameters {
        var minutes = 30.0
        var users = 200
        var rooms = 20
        /// Messages per second, all rooms together.
        var rate = 100
        /// Sessions opened (and as many closed) per second.
        var churn = 5
        var samplingSeconds = 60.0
        static let quick = Parameters(minutes: 0.3, users: 24, rooms: 4, rate: 20, churn: 2, samplingSeconds: 6)
    }

    let parameters: Parameters

    init(_ parameters: Parameters) {
        self.parameters = parameters
    }

    func run(in environment: BenchEnvironment) async throws -> JSONValue {
        let p = parameters
        progress("soak: \(p.minutes) min, \(p.users) users in \(p.rooms) rooms, \(p.rate) msg/s, \(p.churn) sessions/s opened and closed")
        let users = try await environment.registerUsers("soak", count: p.users)
        let perRoom = max(2, min(p.users, 10))
        let rooms = (0..<p.rooms).map { room in (0..<perRoom).map { users[(room * 7 + $0) % users.count] } }
        for (room, members) in rooms.enumerated() {
            try await environment.createConversation("soak-\(room)", name: "Soak \(room)", members: members)
        }
        try await environment.waitForTriggers()
        let adminKey = try await APIKeys(client: environment.client, logger: environment.logger).create(name: "admin")
        let sampler = Sampler(environment: environment, adminKey: adminKey)
        let baseline = try await sampler.sample(minute: 0)
        progress("soak: baseline \(baseline.jsonString)")

        let started = ContinuousClock.now
        let end = started + .seconds(p.minutes * 60)
        let samples = SampleLog(baseline)
        let sent = Counter()
        let acked = Counter()
        let opened = Counter()
        try await withThrowingTaskGroup(of: Void.self) { group in
            // Senders: one connection per room, its first member writing at the room's share of the rate.
            for (index, members) in rooms.enumerated() {
                group.addTask {
                    let sender = members[0]
                    let partition = try Partition(key: "conversation", value: "soak-\(index)")
                    let connection = try await BenchConnection.connect(environment.server.webSocketURL, token: sender.token, logger: environment.logger) { message in
                        if case .ack = message { acked.increment() }
                    }
                    let interval = Duration.seconds(Double(p.rooms) / Double(max(1, p.rate)))
                    var n = 0
                    while ContinuousClock.now < end {
                        n += 1
                        let id = "soak-\(index)-\(n)"
                        connection.send(.upload(
                            requestId: id, partition: partition,
                            operations: [.put(try ObjectKey(collection: "ChatMessage", id: id), body: messageBody(conversation: partition.value, author: sender.email, text: 120, sequence: n))]))
                        sent.increment()
                        try await Task.sleep(for: interval)
                    }
                    try await Task.sleep(for: .seconds(2))
                    await connection.close()
                }
            }
            // Churn: members come and go; each stays a few seconds to half a minute.
            group.addTask {
                var random = SystemRandomNumberGenerator()
                try await withThrowingTaskGroup(of: Void.self) { visits in
                    while ContinuousClock.now < end {
                        for _ in 0..<p.churn {
                            let room = Int.random(in: 0..<rooms.count, using: &random)
                            let member = rooms[room].randomElement(using: &random)!
                            let stay = Duration.seconds(Double.random(in: 2...30, using: &random))
                            visits.addTask {
                                let connection = try await BenchConnection.connect(environment.server.webSocketURL, token: member.token, logger: environment.logger) { _ in }
                                opened.increment()
                                for partition in [try Partition(key: "user", value: member.id), RChatPartitions.allUsers, try Partition(key: "conversation", value: "soak-\(room)")] {
                                    connection.send(.subscribe(partition: partition, cursor: nil))
                                }
                                try await Task.sleep(for: min(stay, max(.zero, end - .now)))
                                await connection.close()
                            }
                        }
                        // Now and then a pull over HTTP, as a REST client would.
                        let puller = users.randomElement(using: &random)!
                        _ = try? await environment.server.http.get("/v1/partitions/user%3D\(puller.id)/changes", token: puller.token)
                        try await Task.sleep(for: .seconds(1))
                    }
                    try await visits.waitForAll()
                }
            }
            // Samples every interval.
            group.addTask {
                var minute = 0.0
                while ContinuousClock.now + .seconds(p.samplingSeconds) <= end {
                    try await Task.sleep(for: .seconds(p.samplingSeconds))
                    minute += p.samplingSeconds / 60
                    let sample = try await sampler.sample(minute: minute)
                    progress("soak: \(sample.jsonString)")
                    samples.append(sample)
                }
            }
            try await group.waitForAll()
        }
        // After the load: sessions closed, triggers caught up, and time for the server to
        // give back what it freed: it trims its heap when the sessions fall, and again 90 s
        // later, when the timers the load left (the connection pool's) have run out.
        try await environment.waitForTriggers()
        let loadEnded = ContinuousClock.now
        try await Task.sleep(for: .seconds(p.minutes < 5 ? 12 : 30))
        let early = try await sampler.sample(minute: started.duration(to: .now).seconds / 60)
        progress("soak: 30 s after the load \(early.jsonString)")
        var after = early
        if p.minutes >= 5 {
            try await Task.sleep(until: loadEnded + .seconds(150))
            after = try await sampler.sample(minute: started.duration(to: .now).seconds / 60)
        }
        progress("soak: after the load \(after.jsonString)")
        let rssBaseline = baseline["rssMB"]?.doubleValue ?? 0
        let rssAfter = after["rssMB"]?.doubleValue ?? 0
        let anonBaseline = baseline["anonMB"]?.doubleValue ?? 0
        let anonAfter = after["anonMB"]?.doubleValue ?? 0
        return [
            "scenario": "soak",
            "minutes": .double(p.minutes), "users": .int(Int64(p.users)), "rooms": .int(Int64(p.rooms)),
            "messagesSent": .int(Int64(sent.current)), "messagesAcked": .int(Int64(acked.current)), "sessionsOpened": .int(Int64(opened.current)),
            "samples": .array(samples.entries),
            "baseline": baseline, "afterLoad30s": early, "afterLoad": after,
            "rssAfterOverBaseline": rssBaseline > 0 ? .double(rounded(rssAfter / rssBaseline)) : .null,
            "anonAfterMinusBaselineMB": .double(rounded(anonAfter - anonBaseline)),
            "target": "after the load: sessions, subscriptions and hub sizes back to the baseline, anonymous memory near it",
        ]
    }

    /// Reads the server's figures: RSS and descriptors from /proc, the rest from /metrics.
    struct Sampler: Sendable {
        let environment: BenchEnvironment
        let adminKey: String

        func sample(minute: Double) async throws -> JSONValue {
            let metrics = try await environment.server.http.get("/metrics", token: adminKey).text
            func gauge(_ name: String) -> JSONValue {
                BenchEnvironment.metric(name, in: metrics).map { .double($0) } ?? .null
            }
            let descriptors = environment.server.processIdentifier.map { pid in
                (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
            } ?? 0
            return [
                "minute": .double(rounded(minute)),
                "rssMB": megabytes(environment.serverRSS()),
                // The anonymous part (the heap, stacks): what the server holds. The rest of its
                // RSS is pages of its binary and libraries, touched once and kept while memory
                // is plenty, shared and never written.
                "anonMB": megabytes(environment.serverAnonymousRSS()),
                "openFiles": .int(Int64(descriptors)),
                "sessions": gauge("psync_sessions"), "subscriptions": gauge("psync_subscriptions"),
                "hubFeeds": gauge("psync_hub_feeds"), "hubFeedMembers": gauge("psync_hub_feed_members"),
                "hubWatchedInputs": gauge("psync_hub_watched_inputs"),
            ]
        }
    }
}

/// Samples taken by one task, read by another.
final class SampleLog: Sendable {
    private let list: Locked<[JSONValue]>

    init(_ first: JSONValue) { list = Locked([first]) }

    func append(_ sample: JSONValue) { list.withLock { $0.append(sample) } }

    var entries: [JSONValue] { list.withLock { $0 } }
}
