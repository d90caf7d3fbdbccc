import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// A connection that has not authenticated may send only small messages and must
/// authenticate quickly: it cannot make the server gather a large message or hold a session.
@Suite("Unauthenticated sessions", .timeLimit(.minutes(30)))
struct UnauthenticatedSessionTests {
    @Test("before auth, a fragmented message is refused with 1009 once its frames pass the limit, not read whole")
    func fragmentedMessage() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let client = try await server.connect(token: nil)
                client.send(fragment: Array(#"{"type":"ping","nonce":""#.utf8), first: true, fin: false)
                // 256 KiB in 4 KiB frames; before the limit, the server gathered all of it and
                // only then answered `unauthenticated` (4001).
                let chunk = [UInt8](repeating: UInt8(ascii: "x"), count: 4 << 10)
                for _ in 0..<64 { client.send(fragment: chunk, first: false, fin: false) }
                client.send(fragment: Array(#""}"#.utf8), first: false, fin: true)
                #expect(try await client.closeCode(timeout: .seconds(30)) == 1009)
            }
        }
    }

    @Test("before auth, a message of exactly the limit is read; one byte more closes with 1009", arguments: [0, 1])
    func limitEdge(over: Int) async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { $0.sessions.unauthenticatedMessageBytes = 2_048 }) { server in
                let alice = try await server.register("alice@example.com")
                let auth = #"{"type":"auth","token":"\#(alice.accessToken)"}"#
                let padded = auth + String(repeating: " ", count: 2_048 + over - auth.utf8.count)
                let client = try await server.connect(token: nil)
                client.send(text: padded)
                if over == 0 {
                    #expect(try await client.next() == .ready(userId: alice.userID))
                    // Authenticated, the full limit applies.
                    client.send(text: #"{"type":"ping","nonce":""# + String(repeating: "x", count: 64 << 10) + #""}"#)
                    guard case .pong = try await client.next() else { Issue.record("no pong"); return }
                    await client.close()
                } else {
                    #expect(try await client.closeCode(timeout: .seconds(30)) == 1009)
                }
            }
        }
    }

    @Test("a connection that trickles a message without authenticating is closed at the auth timeout")
    func slowConnection() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { $0.sessions.authTimeout = .seconds(2) }) { server in
                let client = try await server.connect(token: nil)
                client.send(fragment: Array(#"{"type":"ping","nonce":""#.utf8), first: true, fin: false)
                let trickle = Task {
                    for _ in 0..<300 {
                        try await Task.sleep(for: .milliseconds(100))
                        client.send(fragment: Array("xx".utf8), first: false, fin: false)
                    }
                }
                defer { trickle.cancel() }
                let message = try await client.next(timeout: .seconds(30))
                guard case .error(let error, _) = message else { Issue.record("\(message)"); return }
                #expect(error.code == .unauthenticated)
                #expect(try await client.closeCode(timeout: .seconds(30)) == 4001)
            }
        }
    }
}
