import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Pull and upload over plain HTTP, with the same checks and answers as the WebSocket.
@Suite("HTTP sync", .timeLimit(.minutes(30)))
struct HTTPSyncTests {
    @Test("pull pages with cursors, upload with ack and rejection, same permissions")
    func pullAndUpload() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { server in
                let alice = try await server.register("alice@example.com")
                let bob = try await server.register("bob@example.com")
                let http = server.http
                let path = "/v1/partitions/user%3D\(alice.userID)"
                var operations: [JSONValue] = []
                for n in 0..<30 { operations.append(["op": "put", "collection": "Note", "id": .string("n\(n)"), "body": ["n": .int(Int64(n))]]) }
                let ack = try await http.post(path + "/uploads", ["requestId": "r1", "operations": .array(operations)], token: alice.accessToken)
                #expect(ack.status == 200)
                #expect(ack.json?["type"] == "ack")
                #expect(ack.json?["requestId"] == "r1")
                let again = try await http.post(path + "/uploads", ["requestId": "r1", "operations": .array(operations)], token: alice.accessToken)
                #expect(again.json?["cursor"] == ack.json?["cursor"])

                var copy = PartitionCopy()
                var pages = 0
                repeat {
                    let cursor = copy.cursor.map { "&cursor=\($0.rawValue)" } ?? ""
                    let page = try await http.get(path + "/changes?limit=7" + cursor, token: alice.accessToken)
                    #expect(page.status == 200)
                    copy.apply(try ChangeBatch(json: try #require(page.json)))
                    pages += 1
                } while !copy.upToDate
                #expect(pages == 5)
                #expect(copy.objects.count == 30)

                let rejected = try await http.post(
                    path + "/uploads",
                    ["requestId": "r2", "operations": [["op": "set", "collection": "Note", "id": "n1", "path": "n", "value": 9], ["op": "put", "collection": "Note", "id": "n2", "body": ["forbidden": 1]]]],
                    token: alice.accessToken)
                #expect(rejected.status == 422)
                #expect(rejected.json?["type"] == "rejected")
                #expect(rejected.json?["code"] == "validation_failed")
                #expect(rejected.json?["objects"]?.arrayValue?.count == 2)

                #expect(try await http.get(path + "/changes", token: bob.accessToken).status == 403)
                let denied = try await http.post(path + "/uploads", ["requestId": "x", "operations": []], token: bob.accessToken)
                #expect(denied.status == 403)
                #expect(denied.json?["code"] == "permission_denied")
                let malformed = try await http.post(path + "/uploads", ["requestId": "y", "operations": [["op": "set", "collection": "Note", "id": "n1", "path": "a..b", "value": 1]]], token: alice.accessToken)
                #expect(malformed.status == 400)
                // Refused for good, as the `rejected` answer naming the upload.
                #expect(malformed.json?["type"] == "rejected" && malformed.json?["requestId"] == "y")
                #expect(malformed.json?["code"] == "invalid_path")
                let badPartition = try await http.get("/v1/partitions/no-equals/changes", token: alice.accessToken)
                #expect(badPartition.status == 400)
                #expect(badPartition.json?["error"]?["code"] == "invalid_partition")
            }
        }
    }

    @Test("health, readiness and metrics")
    func operations() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                #expect(try await server.http.get("/health").status == 200)
                let ready = try await server.http.get("/ready")
                #expect(ready.status == 200)
                #expect(ready.headers["x-request-id"] != nil)
                let alice = try await server.register("alice@example.com")
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                _ = try await client.upload([.put(key("Note", "a"), body: [:])], to: partition("user=\(alice.userID)"), requestId: "r")
                let admin = try await APIKeys(client: db.client, logger: db.logger).create(name: "admin")
                let metrics = try await server.http.get("/metrics", token: admin)
                #expect(metrics.status == 200)
                for name in ["psync_sessions", "psync_uploads_total", "psync_upload_duration_seconds", "psync_changes_pushed_total"] {
                    #expect(metrics.text.contains(name), "\(name) missing")
                }
                #expect(metrics.text.contains("psync_uploads_total{outcome=\"ack\"} 1"))
                #expect(try await server.http.get("/nowhere").status == 404)
                await client.close()
            }
        }
    }
}
