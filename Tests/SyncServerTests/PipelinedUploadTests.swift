import PartitionSync
import PostgresNIO
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

@Suite("Pipelined uploads")
struct PipelinedUploadTests {
    @Test("uploads sent without waiting are applied in order, in shared transactions, each answered; a refused one in the middle leaves the rest")
    func pipelined() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let client = try await server.connect(token: alice.accessToken)
                #expect(try await client.next() == .ready(userId: alice.userID))
                let mine = partition("user=\(alice.userID)")
                let other = partition("user=somebody-else")
                let count = 200
                for n in 0..<count {
                    let operations: [SyncOperation] =
                        n == 57
                        ? [.put(key("Note", "x57"), body: [:]), .set(key("Note", "missing"), path: try Path(parsing: "x"), value: 1)]
                        : [.put(key("Note", "n\(n % 10)"), body: ["last": .int(Int64(n))]), .increment(key("Note", "n\(n % 10)"), path: try Path(parsing: "count"), by: 1)]
                    client.send(.upload(requestId: "p\(n)", partition: mine, operations: operations))
                    if n == 120 {
                        // Another partition in between: it is not this session's to write.
                        client.send(.upload(requestId: "elsewhere", partition: other, operations: [.put(key("Note", "e"), body: [:])]))
                    }
                }
                var answers: [String] = []
                while answers.count < count + 1 {
                    switch try await client.next(timeout: .seconds(30)) {
                    case .ack(let requestId, _, _, _): answers.append("ack \(requestId)")
                    case .rejected(let requestId, _, let error, _): answers.append("rejected \(requestId) \(error.code.rawValue)")
                    case let other: Issue.record("unexpected \(other)")
                    }
                }
                var expected = (0..<count).map { $0 == 57 ? "rejected p57 not_found" : "ack p\($0)" }
                expected.insert("rejected elsewhere permission_denied", at: 121)
                #expect(answers == expected)

                let store = db.store()
                #expect(try await store.body(of: key("Note", "x57")) == nil)
                var total: Int64 = 0
                for n in 0..<10 {
                    let body = try #require(try await store.body(of: key("Note", "n\(n)")))
                    total += body["count"]?.intValue ?? 0
                    #expect(body["last"] == .int(Int64(190 + n)))  // the last upload to touch it wins
                }
                #expect(total == Int64(count - 1))
                // Fewer commits than uploads: the queued ones shared transactions (each
                // transaction that writes a partition raises its version once).
                #expect(try await store.headVersion(of: mine) < Int64(count - 1))
                await client.close()
            }
        }
    }
}
