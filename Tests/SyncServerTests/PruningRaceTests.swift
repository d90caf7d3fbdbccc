import Foundation
import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// A slow client in the middle of a snapshot while tombstones and request outcomes are pruned:
/// it ends with a reset or an exact copy, never a silently wrong one.
@Suite("Pruning under a slow snapshot", .timeLimit(.minutes(30)))
struct PruningRaceTests {
    /// One page of at most `limit` objects over HTTP, as a client without a WebSocket pulls.
    static func page(_ server: TestServer, _ partition: Partition, after cursor: Cursor?, limit: Int, token: String) async throws -> ChangeBatch {
        let encoded = partition.description.replacingOccurrences(of: "=", with: "%3D")
        let query = cursor.map { "&cursor=\($0.rawValue.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" } ?? ""
        let response = try await server.http.get("/v1/partitions/\(encoded)/changes?limit=\(limit)\(query)", token: token)
        guard response.status == 200, let json = response.json else { throw OracleFailure("HTTP \(response.status): \(response.text)") }
        return try ChangeBatch(json: json)
    }

    @Test("a cursor inside a commit whose tombstone was pruned gets a reset, not a copy that keeps the deleted object")
    func tombstonePrunedInsideCommit() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                let store = db.store()
                try await store.upload(Upload(partition: mine, operations: [.put(key("Doc", "x"), body: ["n": 1])], principal: alice.userID, requestId: "create-x"))
                // The slow client reads one object per page: x, at version 1.
                var copy = PartitionCopy()
                copy.apply(try await Self.page(server, mine, after: nil, limit: 1, token: alice.accessToken))
                #expect(copy.objects.keys.contains(key("Doc", "x")))
                // One commit (version 2) writes a and b and deletes x: in page order a, b, x.
                try await store.upload(Upload(
                    partition: mine, operations: [.put(key("Doc", "a"), body: [:]), .put(key("Doc", "b"), body: [:]), .delete(key("Doc", "x"))],
                    principal: alice.userID, requestId: "commit-2"))
                // The client gets a, and stops inside version 2.
                copy.apply(try await Self.page(server, mine, after: copy.cursor, limit: 1, token: alice.accessToken))
                // Meanwhile x's tombstone (version 2) and the request outcomes are pruned.
                #expect(try await store.pruneTombstones(olderThan: .zero) == 1)
                #expect(try await store.pruneRequests(olderThan: .zero) >= 2)
                var reset = false
                while !copy.upToDate {
                    let batch = try await Self.page(server, mine, after: copy.cursor, limit: 1, token: alice.accessToken)
                    reset = reset || batch.reset
                    copy.apply(batch)
                }
                let stored = try await store.snapshot(of: mine)
                #expect(copy.objects == stored, "the copy \(reset ? "after a reset " : "")holds \(copy.objects.keys.map(\.id).sorted()), the database \(stored.keys.map(\.id).sorted())")
                #expect(reset, "the client continued past the pruned tombstone without a reset")
            }
        }
    }

    @Test("WebSocket subscribers paused mid-snapshot while objects are deleted and pruned end with an exact copy (after a reset or not)")
    func pausedSubscribers() async throws {
        let seed = ProcessInfo.processInfo.environment["PSYNC_SEED"].flatMap(UInt64.init) ?? 20_261_122
        print("pruning race: seed \(seed) (PSYNC_SEED)")
        var random = SeededGenerator(seed: seed)
        // Large enough (about 6 MB) that the paused client's socket and queue fill long before
        // the snapshot ends.
        let plans = (0..<2).map { _ in (0..<400).map { _ in Int.random(in: 0..<4, using: &random) } }
        let filler = String(repeating: "y", count: 16_000)
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { $0.sessions.batchSize = 5 }) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                let store = db.store()
                for (round, plan) in plans.enumerated() {
                    let ids = (0..<plan.count).map { "r\(round)-\($0)" }
                    for chunk in stride(from: 0, to: ids.count, by: 200) {
                        let operations: [SyncOperation] = ids[chunk..<min(chunk + 200, ids.count)].map { .put(key("Doc", $0), body: ["n": 0, "text": .string(filler)]) }
                        try await store.upload(Upload(partition: mine, operations: operations, principal: alice.userID))
                    }
                    let client = try await server.connect(token: alice.accessToken)
                    _ = try await client.next()
                    client.send(.subscribe(partition: mine, cursor: nil))
                    var copy = PartitionCopy()
                    guard case .changes(let first) = try await client.next(timeout: .seconds(30)) else { Issue.record("no first page"); return }
                    copy.apply(first)
                    client.pauseReading()
                    // While it does not read: deletions, updates and re-creations, in several
                    // commits, then every tombstone and request outcome is pruned.
                    for (index, action) in plan.enumerated() {
                        let object = key("Doc", ids[index])
                        switch action {
                        case 0: try await store.upload(Upload(partition: mine, operations: [.delete(object)], principal: alice.userID, requestId: "d\(round)-\(index)"))
                        case 1: try await store.upload(Upload(partition: mine, operations: [.increment(object, path: try! Path(parsing: "n"), by: .int(1))], principal: alice.userID, requestId: "i\(round)-\(index)"))
                        default: continue
                        }
                    }
                    try await store.pruneTombstones(olderThan: .zero)
                    try await store.pruneRequests(olderThan: .zero)
                    let head = try await store.headVersion(of: mine)
                    client.resumeReading()
                    var reset = false
                    while true {
                        guard case .changes(let batch) = try await client.next(timeout: .seconds(60)) else { continue }
                        reset = reset || batch.reset
                        copy.apply(batch)
                        if batch.upToDate, batch.version == head { break }
                    }
                    let stored = try await store.snapshot(of: mine)
                    print("pruning race: round \(round) ended \(reset ? "after a reset" : "without a reset")")
                    #expect(copy.objects == stored, "seed \(seed), round \(round): the copy \(reset ? "after a reset " : "")differs from the database")
                    await client.close()
                }
            }
        }
    }
}
