import PartitionSync
import SyncProtocol
@testable import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// What a closed session leaves behind in the server's memory.
@Suite("Session memory", .timeLimit(.minutes(30)))
struct SessionMemoryTests {
    @Test("a closed WebSocket session is freed, whether the client closes it, the server does, or the connection just drops")
    func closedSessionFreed() async throws {
        // Exclusive: the count of live sessions is the whole process's.
        try await TestDatabase.with(exclusive: true) { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let before = SyncSession.liveCount
                for round in 0..<10 {
                    // One session with the token in the upgrade request, one with `auth`, one
                    // the server closes (a bad `auth`).
                    let upgraded = try await server.connect(token: alice.accessToken)
                    #expect(try await upgraded.next() == .ready(userId: alice.userID))
                    _ = await upgraded.close()
                    let authenticated = try await server.connect(token: nil)
                    authenticated.send(.auth(token: alice.accessToken))
                    #expect(try await authenticated.next() == .ready(userId: alice.userID))
                    _ = await authenticated.close()
                    let refused = try await server.connect(token: nil)
                    refused.send(.auth(token: "not a token \(round)"))
                    #expect(try await refused.closeCode(timeout: .seconds(30)) == 4001)
                }
                // Each goes when its connection has closed on the server's side too.
                let deadline = ContinuousClock.now + .seconds(60)
                while SyncSession.liveCount > before, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(50))
                }
                let left = SyncSession.liveCount - before
                #expect(left <= 0, "\(left) of 30 closed sessions are still in memory")
                #expect(server.server.sessionCount == 0)
            }
        }
    }

    /// A task's stack (every slab it grew to) is freed only when the task goes, and a finished
    /// task's handle keeps it: an idle session that kept its last worker's handle kept the
    /// worker's whole stack, ~13 kB in a release build, the biggest part of an idle session.
    @Test("an idle session holds no task: its finished worker and reader are let go of")
    func finishedWorkerReleased() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                let operations = (0..<30).map { SyncOperation.put(key("Note", "n\($0)"), body: ["n": .int(Int64($0))]) }
                try await db.store().upload(Upload(partition: mine, operations: operations, principal: alice.userID))
                var clients: [TestSyncClient] = []
                for _ in 0..<3 {
                    let client = try await server.connect(token: alice.accessToken)
                    #expect(try await client.next() == .ready(userId: alice.userID))
                    // A snapshot, and an upload: both are the worker's.
                    guard case .success(let copy) = try await client.subscribe(mine) else {
                        Issue.record("the subscription was refused")
                        return
                    }
                    #expect(copy.objects.count == 30 + clients.count)
                    let answer = try await client.upload(
                        [.put(key("Note", "extra-\(clients.count)"), body: ["n": 0])], to: mine, requestId: "r\(clients.count)")
                    #expect(answer.isAck)
                    clients.append(client)
                }
                // Each worker lets go of its task in the step that ends it, after its last
                // answer was queued.
                let deadline = ContinuousClock.now + .seconds(30)
                while server.server.sessionTasksHeld > 0, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                #expect(server.server.sessionTasksHeld == 0, "idle sessions still hold their finished tasks")
                #expect(server.server.sessionCount == 3)
                for client in clients { _ = await client.close() }
            }
        }
    }
}
