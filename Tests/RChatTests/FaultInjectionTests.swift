import EmbeddedPostgres
#if canImport(Glibc)
import Glibc
#endif
import Foundation
import Locking
import PartitionSync
import RChat
import SyncProtocol
import SyncStorage
import SyncTesting
import SyncTriggers
import Testing

/// A real `psync serve` on a PostgreSQL cluster of its own, stopped with
/// `pg_ctl stop -m immediate` and restarted, or frozen whole (`SIGSTOP` of every PostgreSQL
/// process, as a hung host or a stalled network would) and let go on, at random moments while
/// four WebSocket writers send messages into one room of two members, each upload sent again
/// with its request id until it gets a final answer.
///
/// `PSYNC_SEED` seeds the moments; `PSYNC_FAULT_LONG=1` runs 10 trials of 5 restarts and 20
/// trials of 5 freezes of 2–12 s instead of one trial of 2 of each.
@Suite("RChat while PostgreSQL restarts", .serialized, .timeLimit(.minutes(40)))
struct FaultInjectionTests {
    static let long = ProcessInfo.processInfo.environment["PSYNC_FAULT_LONG"] == "1"

    /// What happens to PostgreSQL in a trial.
    enum Fault: String, Sendable {
        /// `pg_ctl stop -m immediate`, then a start.
        case restart
        /// Every process stopped (`SIGSTOP`) for 2–12 s, then continued (`SIGCONT`).
        case freeze
    }

    @Test("PostgreSQL stopped immediately under load: acked messages stored once, exact unread counts, triggers caught up, /ready honest, SIGTERM stops")
    func restarts() async throws {
        try await Self.trials(.restart, count: Self.long ? 10 : 1, faults: Self.long ? 5 : 2)
    }

    @Test("PostgreSQL frozen (SIGSTOP) under load: no crash, acked messages stored once, exact unread counts, triggers caught up, /ready honest, SIGTERM stops")
    func freezes() async throws {
        try await Self.trials(.freeze, count: Self.long ? 20 : 1, faults: Self.long ? 5 : 2)
    }

    static func trials(_ fault: Fault, count trials: Int, faults: Int) async throws {
        let seed = ProcessInfo.processInfo.environment["PSYNC_SEED"].flatMap(UInt64.init) ?? 20_261_122
        print("FaultInjectionTests: seed \(seed) (PSYNC_SEED), \(trials) trial(s) of \(faults) \(fault)s")
        var totals = (faults: 0, acked: 0, stored: 0)
        for trial in 0..<trials {
            // Exclusive: nothing else loads the machine meanwhile (the database it gets goes unused).
            let figures = try await TestDatabase.with(exclusive: true, timeLimit: .seconds(600)) { _ in
                try await Self.trial(fault, seed: seed &+ UInt64(trial), faults: faults)
            }
            print("FaultInjectionTests \(fault) trial \(trial): \(fault)s \(figures.faults), uploads acked \(figures.acked), messages stored \(figures.stored), unread counts \(figures.unread)")
            totals.faults += figures.faults
            totals.acked += figures.acked
            totals.stored += figures.stored
        }
        print("FaultInjectionTests \(fault) total: \(fault)s \(totals.faults), uploads acked \(totals.acked), messages stored \(totals.stored)")
    }

    /// What the writers and the restarting task share.
    final class Shared: Sendable {
        let stop = Locked(false)
        let acked = Locked<Set<String>>([])
    }

    struct Figures: Sendable {
        var faults: Int
        var acked: Int
        var stored: Int
        var unread: [Int64]
    }

    /// One cluster, one server, `faults` restarts or freezes.
    static func trial(_ fault: Fault, seed: UInt64, faults: Int) async throws -> Figures {
        let directory = NSTemporaryDirectory() + "psync-test-\(getpid())-fault\(UInt32.random(in: 0...UInt32.max))"
        // Durable: an acknowledged commit must survive an immediate stop. A fixed port, so the
        // server finds the restarted cluster where it was.
        let postgres = EmbeddedPostgres(
            configuration: .init(
                dataDirectory: directory + "/data", port: try ServerProcess.freePort(), durable: true,
                settings: ["max_connections": "200"]),
            logger: TestPostgres.makeLogger("psync.test.fault"))
        defer {
            // A frozen cluster would not stop.
            postgres.signalAll(SIGCONT)
            postgres.stopNow()
            try? FileManager.default.removeItem(atPath: directory)
        }
        let url = try DatabaseURL(try await postgres.start().url)
        let server = try ServerProcess(
            database: url,
            environment: ["PSYNC_TRIGGER_LEASE": "2", "PSYNC_PRESENCE_LEASE": "3", "PSYNC_METRICS_PUBLIC": "true"])
        try await server.start(timeout: .seconds(60))
        defer { Task { [server] in await server.kill() } }
        return try await TestPostgres.withClient(url, maximumConnections: 4) { client in
            let store = ObjectStore(client: client, logger: TestPostgres.makeLogger("psync.test.fault"))
            let (alice, bob, room) = try await CrashTests.setUp(server.http, store)
            let partition = try Partition("conversation=\(room)")
            let writers = [(alice, "alice@example.com"), (alice, "alice@example.com"), (bob, "bob@example.com"), (bob, "bob@example.com")]
            let shared = Shared()
            var restarted = 0
            try await withThrowingTaskGroup(of: Int.self) { group in
                for (index, (tokens, author)) in writers.enumerated() {
                    group.addTask {
                        try await Self.write(
                            as: tokens, author: author, writer: index, partition: partition, server: server,
                            stop: { shared.stop.withLock { $0 } }, acked: { id in _ = shared.acked.withLock { $0.insert(id) } })
                        return 0
                    }
                }
                group.addTask {
                    var random = SeededGenerator(seed: seed)
                    for _ in 0..<faults {
                        // The moments and lengths of the faults are the trial's schedule, drawn from the seed.
                        try await Task.sleep(for: .milliseconds(Int.random(in: 500...2_500, using: &random)))
                        switch fault {
                        case .restart:
                            postgres.stopNow()
                            // While the database is gone the server says so.
                            let unready = try await Self.eventually(timeout: .seconds(30)) { (try? await server.http.get("/ready"))?.status == 503 }
                            #expect(unready, "/ready answered other than 503 while PostgreSQL was stopped")
                            try await Task.sleep(for: .milliseconds(Int.random(in: 500...4_000, using: &random)))
                            _ = try await postgres.start()
                        case .freeze:
                            let frozen = Duration.milliseconds(Int.random(in: 2_000...12_000, using: &random))
                            let until = ContinuousClock.now + frozen
                            postgres.signalAll(SIGSTOP)
                            // A hung database is not ready: the check gives up after 2 s.
                            if frozen >= .seconds(5) {
                                let unready = try await Self.eventually(timeout: frozen - .seconds(1)) { (try? await server.http.get("/ready"))?.status == 503 }
                                #expect(unready, "/ready answered other than 503 while PostgreSQL was frozen")
                            }
                            try await Task.sleep(until: until)
                            postgres.signalAll(SIGCONT)
                        }
                        let ready = try await Self.eventually(timeout: .seconds(60)) { (try? await server.http.get("/ready"))?.status == 200 }
                        #expect(ready, "/ready did not answer 200 after PostgreSQL came back")
                        // Alive: a crash shows here, not only at the end.
                        #expect(server.isRunning, "the server died during the \(fault) (see \(server.logPath))")
                    }
                    try await Task.sleep(for: .seconds(1))
                    shared.stop.withLock { $0 = true }
                    return faults
                }
                for try await count in group { restarted += count }
            }
            let ackedIDs = shared.acked.withLock { $0 }
            #expect(!ackedIDs.isEmpty)
            // Every acknowledged message is there, and nothing that was not sent.
            let stored = try await Self.retrying { try await store.snapshot(of: partition) }
            let storedIDs = Set(stored.keys.map(\.id))
            #expect(ackedIDs.subtracting(storedIDs).isEmpty, "acknowledged but missing: \(ackedIDs.subtracting(storedIDs).sorted().prefix(10))")
            #expect(storedIDs.allSatisfy { $0.hasPrefix("w") }, "unexpected objects: \(storedIDs.filter { !$0.hasPrefix("w") }.sorted())")
            // Each member's unread count is raised once per stored message (their own included):
            // a lost event leaves it short, an event handled twice makes it larger.
            let expected = Int64(stored.count)
            let settled = try await Self.eventually(timeout: .seconds(90)) {
                (try? await CrashTests.unreadCounts(store, [alice.userID, bob.userID], room: room)) == [expected, expected]
            }
            let unread = try await Self.retrying { try await CrashTests.unreadCounts(store, [alice.userID, bob.userID], room: room) }
            #expect(settled, "unread counts \(unread) for \(expected) stored messages")
            #expect(try await TriggerLedger(store: store).deadLetters().isEmpty)
            // Every trigger catches up, in the ledger, in the metrics and in the trigger health.
            let admin = TriggerAdmin(store: store, triggers: RChatTriggers.all, logger: TestPostgres.makeLogger("psync.test.fault"))
            let caughtUp = try await Self.eventually(timeout: .seconds(60)) {
                (try? await admin.reports())?.allSatisfy { $0.lag == 0 } == true
            }
            let lags = (try? await admin.reports())?.map { "\($0.name)=\($0.lag)" } ?? []
            #expect(caughtUp, "trigger lag: \(lags)")
            #expect(try await Self.eventually(timeout: .seconds(30)) {
                guard let metrics = try? await server.http.get("/metrics").text else { return false }
                let lags = metrics.split(separator: "\n").filter { $0.hasPrefix("psync_trigger_lag_events{") }
                return lags.count == RChatTriggers.all.count && lags.allSatisfy { $0.hasSuffix(" 0") || $0.hasSuffix(" 0.0") }
            }, "psync_trigger_lag_events not back to 0")
            #expect(try await Self.eventually(timeout: .seconds(30)) { (try? await server.http.get("/health/triggers"))?.status == 200 })
            // SIGTERM stops it (ServerProcess.stop waits 20 s, then kills and answers nil).
            let status = await server.stop()
            #expect(status == 0, "the server did not stop cleanly within 20 s of SIGTERM (status \(String(describing: status)); see \(server.logPath))")
            return Figures(faults: restarted, acked: ackedIDs.count, stored: stored.count, unread: unread)
        }
    }

    /// Sends messages `w<writer>-<n>` one at a time over a WebSocket until `stop`; each is sent
    /// again with its request id (reconnecting when needed) until acknowledged or refused.
    static func write(
        as tokens: TestHTTPClient.Tokens, author: String, writer: Int, partition: Partition, server: ServerProcess,
        stop: @Sendable () -> Bool, acked: @Sendable (String) -> Void
    ) async throws {
        var client: TestSyncClient?
        var n = 0
        while !stop() {
            let id = "w\(writer)-\(n)"
            let operation = RChatHarness.message(id, in: partition.value, author: author, text: "message \(n) of writer \(writer)")
            let deadline = ContinuousClock.now + .seconds(240)
            answered: while true {
                guard ContinuousClock.now < deadline else { throw TestTimeout(what: "an answer to upload \(id)") }
                if client == nil {
                    client = try? await TestSyncClient.connect(url: server.webSocketURL, token: tokens.accessToken)
                    if client == nil {
                        try await Task.sleep(for: .milliseconds(200))
                        continue
                    }
                }
                client!.send(.upload(requestId: id, partition: partition, operations: [operation]))
                let answer = try? await client!.next(timeout: .seconds(30)) { message in
                    switch message {
                    case .ack(let requestId, _, _, _), .rejected(let requestId, _, _, _): requestId == id
                    case .error: true
                    default: false
                    }
                }
                switch answer {
                case .ack?:
                    acked(id)
                    break answered
                case .rejected(_, _, let error, _)?:
                    Issue.record("upload \(id) rejected: \(error)")
                    break answered
                case .error(let error, _)? where error.code == .unavailable:
                    try await Task.sleep(for: .milliseconds(100))
                case .error(let error, _)?:
                    Issue.record("upload \(id) failed: \(error)")
                    break answered
                default:
                    // No answer: the connection is gone or stuck; a new one sends it again.
                    _ = await client?.close()
                    client = nil
                }
            }
            n += 1
        }
        _ = await client?.close()
    }

    static func eventually(timeout: Duration, _ condition: @Sendable () async -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if await condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return await condition()
    }

    /// A read that may meet the pool reconnecting after a restart.
    static func retrying<T>(_ body: () async throws -> T) async throws -> T {
        for _ in 0..<50 {
            if let value = try? await body() { return value }
            try await Task.sleep(for: .milliseconds(200))
        }
        return try await body()
    }
}
