import Foundation
import SyncClient
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// The SDK's snapshot progress against a real server: what a sync button shows while a large
/// partition arrives.
@Suite("Snapshot progress in the SDK", .timeLimit(.minutes(30)))
struct ProgressClientTests {
    @Test("a partition arriving in several pages reports received and total objects, growing, until it is up to date")
    func progress() async throws {
        let harness = ClientHarness()
        defer { harness.cleanUp() }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { $0.sessions.batchSize = 20 }) { server in
                let client = try harness.client(server.baseURL)
                let userID = try await client.register(email: "ann@example.com", password: "correct horse battery")
                let mine = try Partition(key: "user", value: userID)
                for start in stride(from: 0, to: 100, by: 25) {
                    let operations: [SyncOperation] = (start..<start + 25).map { .put(try! ObjectKey(collection: "Note", id: "n\($0)"), body: ["n": .int(Int64($0))]) }
                    try await db.store().upload(Upload(partition: mine, operations: operations, principal: userID))
                }
                try await ClientHarness.running(client) {
                    #expect(await client.waitUntilOnline(timeout: .seconds(20)))
                    let handle = try await client.open(mine)
                    var seen: [SyncProgress?] = []
                    for await snapshot in await handle.updates() {
                        seen.append(snapshot.progress)
                        if snapshot.upToDate {
                            #expect(snapshot.objects.count == 100)
                            break
                        }
                    }
                    let reported = seen.compactMap { $0 }
                    #expect(!reported.isEmpty, "no progress in \(seen)")
                    #expect(reported.allSatisfy { $0.total == 100 })
                    #expect(reported.map(\.received) == reported.map(\.received).sorted())
                    #expect(reported.first.map { $0.received < 100 && $0.fraction < 1 } == true)
                    #expect(seen.last == .some(nil))   // up to date: no progress to show
                }
            }
        }
    }
}
