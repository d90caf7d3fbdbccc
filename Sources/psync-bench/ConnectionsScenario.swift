import Foundation
import RChatModel
import Synchronization
import SyncProtocol
import SyncTesting
import SyncStorage

/// Many idle sessions, each on its own user partition and on the partition all of them watch
/// (`all-users=all-the-users`): the server's memory per session, then how long one change
/// there takes to reach every session.
struct ConnectionsScenario {
    struct Parameters {
        var sessions = 10_000
        var changes = 5
        static let quick = Parameters(sessions: 200, changes: 3)
    }

    /// Open files kept for the rest (database connections, files, the listener) beside the
    /// sessions' sockets.
    static let spareDescriptors = 512

    let parameters: Parameters

    init(_ parameters: Parameters) {
        self.parameters = parameters
    }

    func run(in environment: BenchEnvironment) async throws -> JSONValue {
        let (count, changes) = (parameters.sessions, parameters.changes)
        progress("connections: \(count) sessions, then \(changes) changes to all of them")
        let users = try await environment.tokenUsers("conn-\(count)", count: count)
        let everyone = try Partition("all-users=all-the-users")
        // The floor first, on a quiet database (the setup's trigger work is done): run after
        // the scenario it would share the machine with the triggers still catching up.
        let floor = try await Floor(client: environment.client, logger: environment.logger)
            .notifications(rate: 10, total: changes, database: environment.database.connectionConfiguration())
        try await Task.sleep(for: .seconds(1))
        let rssBefore = environment.serverRSS()

        let tracker = DeliveryTracker(messages: changes, sessions: count)
        let connecting = ContinuousClock.now
        var sessions: [BenchConnection] = []
        var failure: String?
        do {
            sessions = try await connectAll(users, environment: environment, parallel: 64) { _ in
                { message in
                    guard case .changes(let batch) = message, !batch.reset else { return }
                    for object in batch.objects where object.key.id == "bench-broadcast" {
                        guard let latency = nanosecondsSince(object.body?["t"]), case .int(let n)? = object.body?["n"] else { continue }
                        tracker.delivered(Int(n), nanoseconds: latency)
                    }
                }
            } subscribe: { index in
                [RChatPartitions.user(users[index].id), everyone]
            }
        } catch {
            failure = "\(error)"
            progress("connections: stopped: \(error)")
        }
        let connectSeconds = connecting.duration(to: .now).seconds
        try await Task.sleep(for: .seconds(3))
        let rssAfter = environment.serverRSS()
        let perSession = sessions.isEmpty ? 0 : (rssAfter - rssBefore) / sessions.count
        progress("connections: \(sessions.count) sessions in \(rounded(connectSeconds)) s; \(perSession) bytes of server RSS each")

        let completion = LatencyRecorder()
        var incomplete = 0
        if sessions.count == count {
            for n in 0..<changes {
                var body = messageBody(conversation: "", author: "bench", text: 50, sequence: n)
                body["n"] = .int(Int64(n))
                let started = ContinuousClock.now
                _ = try await environment.store.upload(Upload(
                    partition: everyone, operations: [.put(try ObjectKey(collection: "Chatster", id: "bench-broadcast"), body: body)],
                    principal: "service:bench"))
                if await waitFor([tracker.complete[n]], timeout: .seconds(60)) {
                    completion.record(started.duration(to: .now))
                } else {
                    incomplete += 1
                }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
        await closeAll(sessions)

        var result: [String: JSONValue] = [
            "scenario": "connections",
            "sessions": .int(Int64(count)), "held": .int(Int64(sessions.count)),
            "connectSeconds": .double(rounded(connectSeconds)),
            "serverRSSMB": ["before": .double(rounded(Double(rssBefore) / 1_048_576)), "after": .double(rounded(Double(rssAfter) / 1_048_576))],
            "serverBytesPerSession": .int(Int64(perSession)),
            "changes": .int(Int64(changes)), "incomplete": .int(Int64(incomplete)),
            "allSessionsMs": completion.summary,
            "deliveryMs": tracker.latencies.summary,
            "floor": ["what": "INSERT + NOTIFY → one LISTENing connection", "latencyMs": floor.summary],
            "target": "all sessions held, serverBytesPerSession <= 20480",
        ]
        if let failure { result["stoppedBy"] = .string(failure) }
        return .object(result)
    }
}
