import Foundation
import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// The admin endpoints behind the web console, against a real server: who may call them, and
/// what they answer.
@Suite("Admin endpoints and the console", .timeLimit(.minutes(30)))
struct AdminRoutesTests {
    static let endpoints: [(method: String, path: String)] = [
        ("GET", "/v1/admin/overview"), ("GET", "/v1/admin/partitions"), ("GET", "/v1/admin/partitions/user%3Dx/objects"),
        ("GET", "/v1/admin/partitions/user%3Dx/changes"), ("GET", "/v1/admin/users"), ("GET", "/v1/admin/events/1"), ("POST", "/v1/admin/users/x/revoke-sessions"),
        ("DELETE", "/v1/admin/users/x"), ("GET", "/v1/admin/triggers"), ("GET", "/v1/admin/dead-letters"),
        ("POST", "/v1/admin/dead-letters/1/retry"),
    ]

    @Test("every admin endpoint answers 401 without a credential and 403 with a user's or another service's; the console's page holds no data and says so in its policy")
    func access() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let other = try await APIKeys(client: db.client, logger: db.logger).create(name: "notifier")
                let user = try await server.register("ann@example.com")
                for (method, path) in Self.endpoints {
                    #expect(try await server.http.request(method, path, body: nil).status == 401, "\(method) \(path)")
                    #expect(try await server.http.request(method, path, body: nil, token: user.accessToken).status == 403, "\(method) \(path)")
                    #expect(try await server.http.request(method, path, body: nil, token: other).status == 403, "\(method) \(path)")
                }
                let page = try await server.http.get("/console")
                #expect(page.status == 200)
                #expect(page.text.contains("/console/app.js"))
                #expect(page.headers["content-security-policy"]?.contains("script-src 'self'") == true)
                #expect(try await server.http.get("/console/app.js").text.contains("/v1/admin/overview"))
                #expect(try await server.http.get("/console/app.css").status == 200)
            }
        }
    }

    @Test("overview, partitions with their size and subscribers, objects paged and by collection, changes from the head, users with their sessions")
    func answers() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let admin = try await APIKeys(client: db.client, logger: db.logger).create(name: "admin")
                let ann = try await server.register("ann@example.com")
                let mine = try Partition(key: "user", value: ann.userID)
                let store = db.store()
                try await store.upload(Upload(
                    partition: mine, operations: (0..<5).map { .put(try! ObjectKey(collection: $0 < 3 ? "Note" : "Task", id: "o\($0)"), body: ["n": .int(Int64($0))]) },
                    principal: ann.userID))
                let client = try await server.connect(token: ann.accessToken)
                _ = try await client.next()
                guard case .success = try await client.subscribe(mine) else { Issue.record("no subscription"); return }

                let overview = try #require(try await server.http.get("/v1/admin/overview", token: admin).json)
                #expect(overview["samples"]?.arrayValue?.last?["sessions"] == 1)
                #expect(overview["instances"]?.arrayValue?.count == 1)

                let found = try #require(try await server.http.get("/v1/admin/partitions?prefix=user%3D", token: admin).json?.arrayValue)
                let row = try #require(found.first { $0["partition"] == .string(mine.description) })
                #expect(row["objects"] == 5)
                #expect((row["bytes"]?.intValue ?? 0) > 0)
                #expect(row["subscribers"] == 1)
                #expect(try await server.http.get("/v1/admin/partitions?prefix=room%3D", token: admin).json?.arrayValue?.isEmpty == true)

                let path = "/v1/admin/partitions/\(mine.description.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)"
                let first = try #require(try await server.http.get("\(path)/objects?limit=2", token: admin).json)
                #expect(first["objects"]?.arrayValue?.map { $0["id"] } == ["o0", "o1"])
                let next = try #require(first["next"]?.stringValue)
                let second = try #require(try await server.http.get("\(path)/objects?limit=10&after=\(next.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)", token: admin).json)
                #expect(second["objects"]?.arrayValue?.map { $0["id"] } == ["o2", "o3", "o4"])
                #expect(second["next"] == .null)
                let tasks = try #require(try await server.http.get("\(path)/objects?collection=Task", token: admin).json)
                #expect(tasks["objects"]?.arrayValue?.map { $0["id"] } == ["o3", "o4"])

                // From the head cursor of a listing, the changes after it.
                let head = try #require(first["cursor"]?.stringValue)
                try await store.upload(Upload(partition: mine, operations: [.delete(try ObjectKey(collection: "Note", id: "o0"))], principal: ann.userID))
                let changes = try #require(try await server.http.get("\(path)/changes?cursor=\(head.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)", token: admin).json)
                #expect(changes["objects"]?.arrayValue?.map { $0["id"] } == ["o0"])
                #expect(changes["objects"]?.arrayValue?.first?["deleted"] == true)

                let users = try #require(try await server.http.get("/v1/admin/users?email=ANN", token: admin).json?.arrayValue)
                #expect(users.map { $0["email"] } == ["ann@example.com"])
                #expect(try await TestTriggers.eventually {
                    try await server.http.get("/v1/admin/users?email=ann", token: admin).json?.arrayValue?.first?["online"] == true
                })
                #expect(try await server.http.get("/v1/admin/partitions?limit=0", token: admin).status == 400)

                // A change event by its position (a dead letter names one): the first put.
                #expect(try await TestTriggers.eventually { try await server.http.get("/v1/admin/events/1", token: admin).status == 200 })
                let event = try #require(try await server.http.get("/v1/admin/events/1", token: admin).json)
                #expect(event["kind"] == "object")
                #expect(event["operation"] == "insert")
                #expect(event["after"]?["n"] == 0)
                #expect(try await server.http.get("/v1/admin/events/999999", token: admin).status == 404)
                #expect(try #require(try await server.http.get("/v1/admin/overview", token: admin).json)["sessionsEverywhere"] == 1)
            }
        }
    }

    @Test("revoking a user's sessions closes their WebSocket (4001) and refuses their refresh token; they sign in again; deleting the account removes it")
    func revokeAndDelete() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let admin = try await APIKeys(client: db.client, logger: db.logger).create(name: "admin")
                let ann = try await server.register("ann@example.com")
                let client = try await server.connect(token: ann.accessToken)
                _ = try await client.next()
                let revoked = try await server.http.post("/v1/admin/users/\(ann.userID)/revoke-sessions", nil, token: admin)
                #expect(revoked.status == 200)
                #expect(revoked.json?["logins"] == 1)
                #expect(try await client.closeCode(timeout: .seconds(10)) == 4001)
                #expect(try await server.http.post("/v1/auth/refresh", ["refreshToken": .string(ann.refreshToken)]).status == 401)
                let again = try await server.http.login("ann@example.com", password: "correct horse battery")
                #expect(try await server.http.get("/v1/partitions/user%3D\(ann.userID)/changes", token: again.accessToken).status == 200)

                #expect(try await server.http.request("DELETE", "/v1/admin/users/\(ann.userID)", body: nil, token: admin).status == 204)
                #expect(try await server.http.request("DELETE", "/v1/admin/users/\(ann.userID)", body: nil, token: admin).status == 404)
                #expect(try await server.http.get("/v1/admin/users?email=ann", token: admin).json?.arrayValue?.isEmpty == true)
            }
        }
    }
}
