import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// The WebSocket protocol end to end: real server on loopback, real PostgreSQL, real client.
@Suite("WebSocket protocol", .timeLimit(.minutes(2)))
struct ProtocolTests {
    func key(_ collection: String, _ id: String) -> ObjectKey { try! ObjectKey(collection: collection, id: id) }

    @Test("ready, subscribe, snapshot, upload with ack, live change, pong")
    func basics() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let client = try await server.connect(token: alice.accessToken)
                #expect(try await client.next() == .ready(userId: alice.userID))
                let mine = try Partition("user=\(alice.userID)")
                client.send(.subscribe(partition: mine, cursor: nil))
                guard case .changes(let snapshot) = try await client.next() else { Issue.record("no snapshot"); return }
                #expect(snapshot.reset && snapshot.upToDate && snapshot.objects.isEmpty)
                client.send(.upload(requestId: "r1", partition: mine, operations: [.put(key("Note", "n1"), body: ["text": "hi"])]))
                var sawAck = false
                var sawChange = false
                while !(sawAck && sawChange) {
                    switch try await client.next() {
                    case .ack(let requestId, let partition, _):
                        #expect(requestId == "r1" && partition == mine)
                        sawAck = true
                    case .changes(let batch):
                        #expect(batch.objects.map(\.key) == [key("Note", "n1")])
                        #expect(batch.objects.first?.body?["text"] == "hi")
                        #expect(batch.upToDate && !batch.reset)
                        sawChange = true
                    case let other:
                        Issue.record("unexpected \(other)")
                        return
                    }
                }
                client.send(.ping(nonce: 42))
                #expect(try await client.next() == .pong(nonce: 42))
                await client.close()
            }
        }
    }
}
