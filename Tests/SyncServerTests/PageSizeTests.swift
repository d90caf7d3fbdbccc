import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Change pages are bounded in bytes as well as in objects, over HTTP and the WebSocket; an
/// object larger than the bound goes alone in its page.
@Suite("Page size in bytes", .timeLimit(.minutes(30)))
struct PageSizeTests {
    static let pageBytes = 64 << 10

    /// Ten objects of 20 KiB (three fit in a page) and one of 100 KiB (alone).
    func fill(_ db: TestDatabase, _ partition: Partition, owner: String) async throws {
        var operations: [SyncOperation] = []
        for n in 0..<10 { operations.append(.put(key("Blob", "b\(n)"), body: ["text": .string(String(repeating: "x", count: 20 << 10))])) }
        operations.append(.put(key("Blob", "big"), body: ["text": .string(String(repeating: "y", count: 100 << 10))]))
        try await db.store().upload(Upload(partition: partition, operations: operations, principal: owner))
    }

    /// Each page under the bound, or a single object; every object exactly once.
    func check(_ pages: [[Int]]) {
        for page in pages where page.count > 1 {
            #expect(page.reduce(0, +) <= Self.pageBytes, "a page of \(page.count) objects has \(page.reduce(0, +)) bytes of text")
        }
        #expect(pages.joined().count == 11)
        #expect(pages.contains { $0.count == 3 })
        #expect(pages.contains { $0 == [100 << 10] })
    }

    @Test("HTTP changes pages are cut by bytes")
    func http() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { $0.storage.maximumPageBytes = Self.pageBytes }) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                try await fill(db, mine, owner: alice.userID)
                var pages: [[Int]] = []
                var cursor: String?
                while true {
                    let query = cursor.map { "&cursor=\($0)" } ?? ""
                    let response = try await server.http.get("/v1/partitions/user%3D\(alice.userID)/changes?limit=5000\(query)", token: alice.accessToken)
                    #expect(response.status == 200)
                    let json = try #require(response.json)
                    let objects = json["objects"]?.arrayValue ?? []
                    pages.append(objects.compactMap { $0["body"]?["text"]?.stringValue?.utf8.count })
                    cursor = json["cursor"]?.stringValue
                    if json["upToDate"] == true { break }
                    #expect(pages.count < 20)
                    if pages.count >= 20 { return }
                }
                check(pages.filter { !$0.isEmpty })
            }
        }
    }

    @Test("WebSocket snapshot batches are cut by bytes")
    func webSocket() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { $0.storage.maximumPageBytes = Self.pageBytes }) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                try await fill(db, mine, owner: alice.userID)
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                client.send(.subscribe(partition: mine, cursor: nil))
                var pages: [[Int]] = []
                while true {
                    guard case .changes(let batch) = try await client.next(timeout: .seconds(30)) else { continue }
                    pages.append(batch.objects.compactMap { $0.body?["text"]?.stringValue?.utf8.count })
                    if batch.upToDate { break }
                }
                check(pages.filter { !$0.isEmpty })
                await client.close()
            }
        }
    }
}
