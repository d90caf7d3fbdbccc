import Foundation
import PartitionSync
import RChat
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// A real `psync` process killed with SIGKILL after an upload committed and before its ack
/// left: the client sends the same upload again, with the same request id, to the restarted
/// server and gets the first outcome; the upload took effect once.
@Suite("Kill between commit and ack", .timeLimit(.minutes(30)))
struct CommitCrashTests {
    static let counter = key("ChatMessage", "counter")

    static func increment(requestId: String) -> ClientMessage {
        .upload(requestId: requestId, partition: RChatPartitions.conversation("crash-room"), operations: [.increment(counter, path: try! Path(parsing: "likes"), by: .int(1))])
    }

    @Test("an increment committed by a process killed before its ack is applied once; the resend gets the original ack")
    func killedBetweenCommitAndAck() async throws {
        try await TestDatabase.with(exclusive: true) { db in
            let store = db.store()
            let setup = try ServerProcess(database: db.url, environment: CrashTests.environment)
            try await setup.start()
            let (alice, _, room) = try await CrashTests.setUp(setup.http, store)
            let conversation = RChatPartitions.conversation(room)
            let put: JSONValue = [
                "requestId": "put-counter",
                "operations": [["op": "put", "collection": "ChatMessage", "id": "counter",
                                "body": ["author": "alice@example.com", "text": "count", "location": [], "timestamp": .string(JSONValue.iso8601(Date())), "likes": 0]]],
            ]
            let created = try await setup.http.post("/v1/partitions/conversation%3D\(room)/uploads", put, token: alice.accessToken)
            #expect(created.status == 200, "\(created.text)")
            await setup.stop()

            // This process stops every answer to `bump` after its commit.
            var environment = CrashTests.environment
            environment["PSYNC_FAILPOINT"] = "after-commit-before-ack:bump"
            let doomed = try ServerProcess(database: db.url, environment: environment)
            try await doomed.start()
            let client = try await TestSyncClient.connect(url: doomed.webSocketURL, token: alice.accessToken)
            _ = try await client.next()
            client.send(Self.increment(requestId: "bump"))
            #expect(try await RChatHarness.eventually { try await store.body(of: Self.counter)?["likes"] == 1 }, "the upload never committed")
            let committedVersion = try #require(try await store.snapshot(of: conversation)[Self.counter]?.version)
            await doomed.kill()
            // The connection died with the process; no answer came.
            while let message = try? await client.next(timeout: .seconds(5)) {
                if case .ack = message { Issue.record("the killed process answered: \(message)") }
            }

            let restarted = try ServerProcess(database: db.url, environment: CrashTests.environment)
            try await restarted.start()
            let again = try await TestSyncClient.connect(url: restarted.webSocketURL, token: alice.accessToken)
            _ = try await again.next()
            again.send(Self.increment(requestId: "bump"))
            let answer = try await again.next { message in
                switch message {
                case .ack(let id, _, _, _), .rejected(let id, _, _, _): return id == "bump"
                case .error: return true
                default: return false
                }
            }
            guard case .ack(_, _, _, let version) = answer else {
                Issue.record("the resend was answered \(answer)")
                return
            }
            #expect(version == committedVersion, "the resend's ack names version \(String(describing: version)), the commit was \(committedVersion)")
            // And over HTTP, the same outcome again.
            let overHTTP = try await restarted.http.post(
                "/v1/partitions/conversation%3D\(room)/uploads",
                ["requestId": "bump", "operations": [["op": "increment", "collection": "ChatMessage", "id": "counter", "path": "likes", "by": 1]]],
                token: alice.accessToken)
            #expect(overHTTP.status == 200)
            #expect(overHTTP.json?["version"]?.intValue == committedVersion)
            #expect(try await store.body(of: Self.counter)?["likes"] == 1, "the increment was applied more than once")
            await again.close()
            await client.close()
            await restarted.stop()
        }
    }
}
