import Foundation
import Locking
import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import SyncTriggers
import Testing

/// The server-level oracle: two instances on one database with the version poll off, ten
/// WebSocket subscribers that subscribe, unsubscribe, reconnect to either instance and resume
/// from their cursors, and stop reading for a while; writers through the WebSocket and HTTP
/// of both instances, and a trigger that writes a derived object for every change.
///
/// Everything any client ever received is pooled into one record of object states by
/// version (``ServerOracle``); with the database's final rows it gives each object's state at
/// every version a client saw. Each up-to-date copy must equal that state at its version (a
/// subscriber that missed a commit keeps an older state of an object someone else saw
/// change), the same (object, version) must never arrive with two bodies, a subscriber's
/// versions of a partition never go backwards, and at the end every copy equals the database.
@Suite("Server oracle", .timeLimit(.minutes(30)))
struct ServerOracleTests {
    static let rooms = (0..<3).map { partition("room=r\($0)") }
    static let mirror = partition("mirror=all")
    static var partitions: [Partition] { rooms + [mirror] }

    /// For every change of a `Doc`, a `Mirror` of the same id in `mirror=all` holding the
    /// Doc's body after the change (`null` once deleted): derived objects, written by a trigger.
    static let mirrorTrigger = Trigger(name: "mirror", collections: ["Doc"]) { event, context in
        guard let source = event.key else { return }
        let copy: JSONValue = event.after.map { .object($0) } ?? .null
        _ = try await context.apply([.put(try ObjectKey(collection: "Mirror", id: source.id), body: ["copy": copy])], in: mirror)
    }

    static var application: SyncApplication {
        var permissions = Permissions()
        let signedIn: ClosureRule.Decision = { principal, _, _ in principal.userID != nil }
        permissions.register(ClosureRule(read: signedIn, write: signedIn), for: PartitionKind("room"))
        permissions.register(ClosureRule(read: signedIn, write: { _, _, _ in false }), for: PartitionKind("mirror"))
        return SyncApplication(permissions: permissions, triggers: [mirrorTrigger])
    }

    struct Size: Sendable, CustomStringConvertible {
        var batchesPerWriter: Int
        var subscribers: Int
        var description: String { "\(batchesPerWriter) batches per writer, \(subscribers) subscribers" }
    }

    static var seed: UInt64 { ProcessInfo.processInfo.environment["PSYNC_SEED"].flatMap(UInt64.init) ?? 20_261_122 }
    static var large: Bool { ProcessInfo.processInfo.environment["PSYNC_ORACLE_LARGE"] == "1" }

    @Test("every up-to-date copy equals the oracle at its version; versions never go backwards (small, for CI)")
    func small() async throws {
        let batches = ProcessInfo.processInfo.environment["PSYNC_STRESS_BATCHES"].flatMap(Int.init) ?? 25
        try await run(Size(batchesPerWriter: min(batches, 40), subscribers: 10))
    }

    @Test("the same, larger (PSYNC_ORACLE_LARGE=1; size from PSYNC_STRESS_BATCHES)", .enabled(if: large))
    func larger() async throws {
        let batches = ProcessInfo.processInfo.environment["PSYNC_STRESS_BATCHES"].flatMap(Int.init) ?? 300
        try await run(Size(batchesPerWriter: batches, subscribers: 10))
    }

    func run(_ size: Size) async throws {
        let seed = Self.seed
        print("server oracle: seed \(seed) (PSYNC_SEED), \(size), version poll off")
        try await TestDatabase.with(exclusive: true, timeLimit: .seconds(300)) { db in
            try await TestServer.with(database: db.url, application: Self.application, configure: FaultFixtures.pollOff) { a in
                try await TestServer.with(database: db.url, application: Self.application, configure: FaultFixtures.pollOff) { b in
                    let servers = [a, b]
                    let user = try await a.register("oracle@example.com")
                    let oracle = ServerOracle()
                    let writing = Countdown(3)
                    let subscribers = try await withThrowingTaskGroup(of: OracleSubscriber?.self) { group in
                        for writer in 0..<3 {
                            group.addTask {
                                defer { writing.done() }
                                var random = SeededGenerator(seed: seed &+ UInt64(writer) &* 7_919)
                                var model = OracleWriter(index: writer)
                                for batch in 0..<size.batchesPerWriter {
                                    let room = Self.rooms[Int.random(in: 0..<Self.rooms.count, using: &random)]
                                    let operations = model.randomBatch(in: room, using: &random)
                                    let requestId = "w\(writer)-\(batch)"
                                    let server = servers[Int.random(in: 0..<2, using: &random)]
                                    let accepted: Bool
                                    if writer == 2 {
                                        accepted = try await Self.uploadOverHTTP(operations, to: room, requestId: requestId, server: server, token: user.accessToken)
                                    } else {
                                        accepted = try await Self.uploadOverWebSocket(operations, to: room, requestId: requestId, server: server, token: user.accessToken)
                                    }
                                    model.answered(accepted: accepted)
                                }
                                return nil
                            }
                        }
                        for index in 0..<size.subscribers {
                            group.addTask {
                                let subscriber = OracleSubscriber(
                                    index: index, seed: seed &+ 1_000 &+ UInt64(index), servers: servers, token: user.accessToken, oracle: oracle)
                                try await subscriber.wander(while: { writing.remaining > 0 })
                                return subscriber
                            }
                        }
                        var done: [OracleSubscriber] = []
                        for try await subscriber in group { if let subscriber { done.append(subscriber) } }
                        return done
                    }

                    // The trigger catches up: every Doc's Mirror holds its final body.
                    let store = db.store()
                    let settled = try await TestTriggers.eventually(timeout: .seconds(60)) {
                        try await Self.mirrorsMatch(store)
                    }
                    #expect(settled, "the mirrors never matched the Docs")
                    var heads: [Partition: Int64] = [:]
                    for partition in Self.partitions { heads[partition] = try await store.headVersion(of: partition) }
                    for subscriber in subscribers {
                        try await subscriber.finish(heads: heads)
                    }
                    // The database's final rows, tombstones included, join what clients saw.
                    let epoch = try await store.epoch()
                    for partition in Self.partitions {
                        let start = CursorPosition(epoch: epoch, version: 0).cursor
                        for try await page in store.changeFeed(in: partition, after: start) {
                            oracle.learn(page.objects, in: partition, from: "the database")
                        }
                    }
                    var observations: [OracleObservation] = []
                    for subscriber in subscribers {
                        let copies = await subscriber.copies
                        for partition in Self.partitions {
                            let stored = try await store.snapshot(of: partition)
                            #expect(copies[partition]?.objects == stored, "subscriber \(subscriber.index): \(partition) differs from the database")
                        }
                        observations += await subscriber.observations
                    }
                    let violations = oracle.check(observations)
                    let observed = observations.count
                    print("server oracle: seed \(seed), \(observed) up-to-date copies checked, \(violations.count) violations")
                    for violation in violations.prefix(20) { Issue.record("seed \(seed): \(violation)") }
                    #expect(violations.isEmpty, "seed \(seed)")
                    for subscriber in subscribers { await subscriber.close() }
                }
            }
        }
    }

    static func mirrorsMatch(_ store: ObjectStore) async throws -> Bool {
        var docs: [String: [String: JSONValue]] = [:]
        for room in rooms {
            for (key, object) in try await store.snapshot(of: room) { docs[key.id] = object.body }
        }
        let mirrors = try await store.snapshot(of: mirror)
        for (id, body) in docs where mirrors[try ObjectKey(collection: "Mirror", id: id)]?.body?["copy"] != .object(body) { return false }
        for (key, object) in mirrors where docs[key.id] == nil && object.body?["copy"] != .null { return false }
        return true
    }

    /// Uploads through a fresh WebSocket; whether it was acked (else rejected).
    static func uploadOverWebSocket(_ operations: [SyncOperation], to room: Partition, requestId: String, server: TestServer, token: String) async throws -> Bool {
        let client = try await server.connect(token: token)
        defer { Task { await client.close() } }
        _ = try await client.next()
        let answer = try await client.upload(operations, to: room, requestId: requestId)
        switch answer {
        case .ack: return true
        case .rejected: return false
        default: throw OracleFailure("upload \(requestId): \(answer)")
        }
    }

    /// Uploads over HTTP; whether it was acked (else rejected).
    static func uploadOverHTTP(_ operations: [SyncOperation], to room: Partition, requestId: String, server: TestServer, token: String) async throws -> Bool {
        let path = "/v1/partitions/\(room.description.replacingOccurrences(of: "=", with: "%3D"))/uploads"
        let response = try await server.http.post(path, ["requestId": .string(requestId), "operations": .array(operations.map(\.json))], token: token)
        if response.status == 200 { return true }
        guard (400..<500).contains(response.status) else { throw OracleFailure("upload \(requestId): HTTP \(response.status) \(response.text)") }
        return false
    }
}

/// Writers still running.
final class Countdown: Sendable {
    private let count: Locked<Int>
    init(_ count: Int) { self.count = Locked(count) }
    var remaining: Int { count.withLock { $0 } }
    func done() { count.withLock { $0 -= 1 } }
}

struct OracleFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
