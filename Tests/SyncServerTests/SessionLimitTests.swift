import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// One user's open sessions on an instance are bounded.
@Suite("Session limits", .timeLimit(.minutes(30)))
struct SessionLimitTests {
    @Test("a user may open exactly the allowed sessions; one more is refused at the upgrade, or after auth with 4003")
    func sessionsPerUser() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { $0.sessions.maximumSessionsPerUser = 3 }) { server in
                let alice = try await server.register("alice@example.com")
                var open: [TestSyncClient] = []
                for _ in 0..<3 {
                    let client = try await server.connect(token: alice.accessToken)
                    #expect(try await client.next() == .ready(userId: alice.userID))
                    open.append(client)
                }
                // With the token in the upgrade request: refused before the upgrade (429).
                if let refused = try? await server.connect(token: alice.accessToken) {
                    await #expect(throws: (any Error).self) { _ = try await refused.next(timeout: .seconds(10)) }
                }
                // With `auth`: told why, then closed with 4003.
                let late = try await server.connect(token: nil)
                late.send(.auth(token: alice.accessToken))
                let answer = try await late.next()
                guard case .error(let error, _) = answer else { Issue.record("\(answer)"); return }
                #expect(error.code == .tooManySessions)
                #expect(try await late.closeCode(timeout: .seconds(30)) == 4003)
                // Another user is not affected.
                let bob = try await server.register("bob@example.com")
                let bobs = try await server.connect(token: bob.accessToken)
                #expect(try await bobs.next() == .ready(userId: bob.userID))
                // A closed session frees its place.
                await open.removeFirst().close()
                let deadline = ContinuousClock.now + .seconds(30)
                while true {
                    let again = try await server.connect(token: alice.accessToken)
                    if (try? await again.next(timeout: .seconds(10))) == .ready(userId: alice.userID) {
                        open.append(again)
                        break
                    }
                    guard ContinuousClock.now < deadline else { Issue.record("the closed session's place was not freed"); return }
                    try await Task.sleep(for: .milliseconds(100))
                }
                for client in open + [bobs] { await client.close() }
            }
        }
    }
}
