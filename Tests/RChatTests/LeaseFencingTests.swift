import Foundation
import Locking
import PartitionSync
import RChat
import SyncStorage
import SyncTesting
import SyncTriggers
import Testing

/// A trigger's lease holder frozen (SIGSTOP) for longer than its lease while messages flow,
/// then resumed: the other instance takes the trigger over, and whatever the frozen one was
/// doing when it stopped (a handling transaction half done, a renewal on its way) is fenced
/// off when it wakes. RChat's unread counts are increments, so an event handled twice shows.
@Suite("Trigger leases under frozen instances", .timeLimit(.minutes(30)))
struct LeaseFencingTests {
    /// What the writer and the freezing task share.
    final class Shared: Sendable {
        /// Which server is frozen now; the writer sends through the other.
        let frozen = Locked<Int?>(nil)
        let stop = Locked(false)
        let sent = Locked(0)
    }

    @Test("a lease holder frozen longer than its lease and resumed applies no event twice and loses none")
    func frozenHolder() async throws {
        let seed = ProcessInfo.processInfo.environment["PSYNC_SEED"].flatMap(UInt64.init) ?? 20_261_122
        print("LeaseFencingTests: seed \(seed) (PSYNC_SEED)")
        try await TestDatabase.with(exclusive: true) { db in
            let store = db.store()
            // Each process pauses once inside its first unread-count transaction, after the
            // handler and before the progress is recorded: the moment to freeze it.
            var environment = CrashTests.environment
            environment["PSYNC_FAILPOINT"] = "\(Failpoint.triggerBeforeCommit.rawValue):\(RChatTriggers.unreadCounts.name)"
            let servers = [
                try ServerProcess(database: db.url, environment: environment),
                try ServerProcess(database: db.url, environment: environment),
            ]
            for server in servers { try await server.start() }
            defer { for server in servers { server.resume() } }
            let (alice, bob, room) = try await CrashTests.setUp(servers[0].http, store)
            let shared = Shared()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    var n = 0
                    while !shared.stop.withLock({ $0 }) {
                        let index = shared.frozen.withLock { $0 }.map { 1 - $0 } ?? n % 2
                        try await CrashTests.send(n, room: room, as: n % 3 == 0 ? bob : alice,
                                                  author: n % 3 == 0 ? "bob@example.com" : "alice@example.com", via: [servers[index]])
                        n += 1
                        shared.sent.withLock { $0 = n }
                    }
                }
                group.addTask {
                    // First the holder caught in the middle of its transaction, then whoever holds
                    // the trigger at random moments.
                    let paused = try await Self.firstToReachFailpoint(servers)
                    try await Self.freeze(servers, paused, shared)
                    var random = SeededGenerator(seed: seed)
                    for round in 0..<2 {
                        try await Task.sleep(for: .milliseconds(Int.random(in: 300...1_200, using: &random)))
                        let status = try await TriggerLedger(store: store).statuses().first { $0.name == RChatTriggers.unreadCounts.name }
                        let holder = try #require(status?.leaseHolder, "round \(round): nobody holds the unread-count trigger")
                        let index = try #require(servers.firstIndex { $0.processIdentifier.map { holder.contains("-\($0)-") } == true })
                        try await Self.freeze(servers, index, shared)
                    }
                    try await Task.sleep(for: .milliseconds(500))
                    shared.stop.withLock { $0 = true }
                }
                try await group.waitForAll()
            }
            let messages = shared.sent.withLock { $0 }
            #expect(try await CrashTests.messageCount(store, room: room) == messages)
            let expected = Int64(messages)
            let settled = try await RChatHarness.eventually(timeout: .seconds(60)) {
                try await CrashTests.unreadCounts(store, [alice.userID, bob.userID], room: room) == [expected, expected]
            }
            let counts = try await CrashTests.unreadCounts(store, [alice.userID, bob.userID], room: room)
            #expect(settled, "unread counts \(counts) for \(messages) messages: an event lost (lower) or applied twice (higher)")
            #expect(try await TriggerLedger(store: store).deadLetters().isEmpty)
            print("LeaseFencingTests: \(messages) messages, 3 freezes (the first mid-transaction), unread counts \(counts)")
            for server in servers { #expect(await server.stop() == 0) }
        }
    }

    /// The index of the server whose log says it reached the failpoint first.
    static func firstToReachFailpoint(_ servers: [ServerProcess]) async throws -> Int {
        let marker = "failpoint \(Failpoint.triggerBeforeCommit.rawValue) reached"
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            for (index, server) in servers.enumerated() {
                if let log = try? String(contentsOfFile: server.logPath, encoding: .utf8), log.contains(marker) { return index }
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        throw TestTimeout(what: "a server to reach the failpoint")
    }

    /// Freezes `servers[index]` for twice the trigger lease (2 s), while the writer sends
    /// through the other: the other instance takes the trigger over meanwhile.
    static func freeze(_ servers: [ServerProcess], _ index: Int, _ shared: Shared) async throws {
        shared.frozen.withLock { $0 = index }
        servers[index].freeze()
        try await Task.sleep(for: .seconds(4))
        servers[index].resume()
        shared.frozen.withLock { $0 = nil }
    }
}
