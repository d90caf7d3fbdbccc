import Foundation
import Locking
import PartitionSync
import SyncClient
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// An app killed (SIGKILL) with increments pending, at random points: its store, reopened,
/// holds every write `write` returned for, each is applied once on the server, and the local
/// view never shows one twice while the client reconnects (issue 21, "Resilience").
@Suite("Client process killed with writes pending", .timeLimit(.minutes(30)))
struct ClientKillTests {
    /// Where the probe is when it is killed.
    enum KillPoint: CaseIterable {
        /// No server reachable: every write waits in the store's queue.
        case offline
        /// Online, writing and uploading as fast as it can: killed wherever it is, perhaps
        /// inside a write's transaction or an acknowledgement's.
        case uploading
        /// An upload the server applied and acknowledged, the ack unread: the server is frozen
        /// while the probe writes, the probe frozen before the server goes on, killed after the
        /// commit.
        case ackUnread
    }

    /// Rounds per run; `PSYNC_KILL_ROUNDS` runs more (a soak).
    static let rounds = ProcessInfo.processInfo.environment["PSYNC_KILL_ROUNDS"].flatMap(Int.init) ?? 12
    static let room: JSONValue = ["id": "c-count", "displayName": "Count", "unreadCount": 0, "members": []]
    static let count = path("conversations[id=c-count].unreadCount")

    static func unread(_ body: [String: JSONValue]?) -> Int64? {
        body?["conversations"]?.arrayValue?.first { $0["id"] == "c-count" }?["unreadCount"]?.intValue
    }

    @Test("a client killed with increments queued or in flight keeps them; each is applied once and never shown twice")
    func killedWithPendingIncrements() async throws {
        let seed = ProcessInfo.processInfo.environment["PSYNC_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0..<1_000_000)
        print("ClientKillTests: seed \(seed) (PSYNC_SEED=\(seed) replays the kill points)")
        let harness = ClientHarness()
        defer { harness.cleanUp() }
        try await TestDatabase.with(exclusive: true, timeLimit: .seconds(540)) { db in
            let server = try ServerProcess(database: db.url)
            try await server.start()
            do {
                try await Self.rounds(seed: seed, harness: harness, database: db, server: server)
            } catch {
                server.resume()
                await server.stop()
                throw error
            }
            await server.stop()
        }
    }

    static func rounds(seed: UInt64, harness: ClientHarness, database: TestDatabase, server: ServerProcess) async throws {
        // Ann signs up in the store the probe then opens, with a room whose unread count the
        // increments raise (RChat's User record takes no field outside its model).
        let setup = try harness.client(server.baseURL)
        let userID = try await setup.register(email: "ann@example.com", password: "correct horse")
        let mine = try Partition(key: "user", value: userID)
        let userKey = key("User", userID)
        try await ClientHarness.running(setup) {
            let handle = try await setup.open(mine)
            for await snapshot in await handle.updates() where !snapshot.objects.isEmpty { break }
            try await setup.write([.arrayAppend(userKey, path: path("conversations"), value: room)], in: mine)
            #expect(await setup.waitUntilUploaded(timeout: .seconds(30)))
        }
        @Sendable func onServer() async throws -> Int64 { unread(try await database.body(of: userKey)) ?? -1 }

        var random = SeededGenerator(seed: seed)
        var points = (0..<rounds).map { KillPoint.allCases[$0 % KillPoint.allCases.count] }
        points.shuffle(using: &random)
        var total: Int64 = 0
        var acksLost = 0
        for (round, point) in points.enumerated() {
            let increments = point == .ackUnread ? Int.random(in: 3...6, using: &random) : 30
            let killAfter = point == .ackUnread ? increments : Int.random(in: 1...increments, using: &random)
            let serverURL = point == .offline ? "http://127.0.0.1:\(try ServerProcess.freePort())" : server.baseURL

            // The app: writes, and is killed.
            let probe = try ProbeProcess(
                [
                    "--store", harness.directory + "/store.sqlite", "--server", serverURL, "--partition", mine.description,
                    "--object", "User/\(userID)", "--path", count.description, "--increments", "\(increments)",
                ] + (point == .offline ? [] : ["--online"]),
                logPath: harness.directory + "/probe-\(round).log")
            try await probe.waitFor("ready")
            if point == .ackUnread { server.freeze() }
            try probe.go()
            try await probe.waitFor("queued \(killAfter)")
            if point == .ackUnread {
                // The first upload waits in the frozen server's socket: the probe stops before
                // it can read the ack, the server goes on and commits it.
                probe.signal(SIGSTOP)
                server.resume()
                let committed = total + 1
                _ = try await TestTriggers.eventually(timeout: .seconds(10)) { try await onServer() == committed }
            }
            let queued = Int64(try await probe.kill())

            // The app starts again from its store, offline first.
            let client = try harness.client(server.baseURL)
            let shown = try #require(unread(try await client.objects(in: mine).first { $0.key == userKey }?.body))
            let pending = Int64(try await client.unacknowledgedWrites())
            let stored = try await onServer()
            print("ClientKillTests round \(round) \(point): queued \(queued), shown \(shown - total), on the server \(stored - total) + pending \(pending)")
            // Every write that returned is there; the one being written when the kill came
            // (perhaps) is there whole or not at all.
            #expect(shown - total == queued || shown - total == queued + 1, "round \(round) (\(point)), seed \(seed)")
            // The store still holds what the server has not applied (plus perhaps the upload
            // whose ack was lost: applied, still queued).
            #expect(stored + pending == shown || stored + pending == shown + 1, "round \(round) (\(point)), seed \(seed)")
            if stored + pending == shown + 1 { acksLost += 1 }

            // Reconnected: every snapshot shows the same count until all is confirmed.
            let snapshots = Recorded<PartitionSnapshot>()
            let updates = await client.updates(of: mine)
            let observer = Task {
                for await snapshot in updates { snapshots.append(snapshot) }
            }
            try await ClientHarness.running(client) {
                #expect(await client.waitUntilUploaded(timeout: .seconds(60)), "round \(round) (\(point)), seed \(seed)")
                let confirmed = try await TestTriggers.eventually(timeout: .seconds(30)) {
                    snapshots.all.last.map { $0.upToDate && $0.pendingWrites == 0 } ?? false
                }
                #expect(confirmed, "round \(round) (\(point)), seed \(seed): the writes were never confirmed")
            }
            observer.cancel()
            await observer.value

            // Each increment applied once on the server, never shown twice (nor lost) locally.
            #expect(try await onServer() == shown, "round \(round) (\(point)), seed \(seed)")
            let counts = snapshots.all.map { unread($0.objects.first { $0.key == userKey }?.body) }
            #expect(counts.allSatisfy { $0 == shown }, "round \(round) (\(point)), seed \(seed): the local view showed \(counts), expected \(shown) throughout")
            #expect(unread(try await client.objects(in: mine).first { $0.key == userKey }?.body) == shown)
            total = shown
        }
        print("ClientKillTests: \(rounds) rounds, \(total) increments, \(acksLost) uploads applied with their ack lost")
        // The case that matters happened: an upload applied by the server, its ack lost with the app.
        #expect(acksLost > 0, "seed \(seed)")
    }
}

/// What a task observed, for the test to read.
final class Recorded<Element: Sendable>: Sendable {
    private let elements = Locked<[Element]>([])
    func append(_ element: Element) { elements.withLock { $0.append(element) } }
    var all: [Element] { elements.withLock { $0 } }
}
