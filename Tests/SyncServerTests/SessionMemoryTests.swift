import PartitionSync
import SyncProtocol
@testable import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// What a closed session leaves behind in the server's memory.
@Suite("Session memory", .timeLimit(.minutes(30)))
struct SessionMemoryTests {
    @Test("a closed WebSocket session frees its request context (HummingbirdWebSocket's handler box and the context hold each other)")
    func requestContextFreed() async throws {
        // Exclusive: the count of live request contexts is the whole process's.
        try await TestDatabase.with(exclusive: true) { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let before = WebSocketHandlerSlot.liveCount
                for _ in 0..<20 {
                    // One session with the token in the upgrade request, one with `auth`.
                    let upgraded = try await server.connect(token: alice.accessToken)
                    #expect(try await upgraded.next() == .ready(userId: alice.userID))
                    _ = await upgraded.close()
                    let authenticated = try await server.connect(token: nil)
                    authenticated.send(.auth(token: alice.accessToken))
                    #expect(try await authenticated.next() == .ready(userId: alice.userID))
                    _ = await authenticated.close()
                }
                // Each goes when its connection has closed on the server's side too.
                let deadline = ContinuousClock.now + .seconds(60)
                while WebSocketHandlerSlot.liveCount > before, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                let left = WebSocketHandlerSlot.liveCount - before
                #expect(left <= 0, "\(left) of 40 closed sessions' request contexts are still in memory")
            }
        }
    }
}
