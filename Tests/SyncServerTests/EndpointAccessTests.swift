import Foundation
import PartitionSync
import SyncProtocol
import SyncServer
import SyncTesting
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Who may reach what: the WebSocket upgrade's answer to a bad credential, and `/metrics`.
@Suite("Endpoint access", .timeLimit(.minutes(30)))
struct EndpointAccessTests {
    @Test("a bad credential on the WebSocket upgrade is answered 401, as the protocol says")
    func upgradeWithBadCredential() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let tokens = try await server.register("ann@example.com")
                let refused = try await Self.upgradeStatus(port: server.port, token: tokens.accessToken + "x")
                #expect(refused.status == 401)
                #expect(refused.text.contains("unauthenticated"))
                // A good credential still upgrades, and so does none (the client then sends `auth`).
                #expect(try await Self.upgradeStatus(port: server.port, token: tokens.accessToken).status == 101)
                #expect(try await Self.upgradeStatus(port: server.port, token: nil).status == 101)
            }
        }
    }

    @Test("the WebSocket's presence parameter is on or off; anything else is answered 400 bad_request before the upgrade")
    func presenceParameter() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let tokens = try await server.register("ann@example.com")
                for value in ["on", "off"] {
                    #expect(try await Self.upgradeStatus(port: server.port, token: tokens.accessToken, query: "?presence=\(value)").status == 101)
                }
                for value in ["maybe", "OFF", ""] {
                    let refused = try await Self.upgradeStatus(port: server.port, token: tokens.accessToken, query: "?presence=\(value)")
                    #expect(refused.status == 400, "presence=\(value)")
                    #expect(refused.text.contains("bad_request"), "presence=\(value): \(refused.text)")
                }
            }
        }
    }

    /// The status line (and what follows) of a WebSocket upgrade request sent on a raw socket.
    static func upgradeStatus(port: Int, token: String?, query: String = "") async throws -> (status: Int, text: String) {
        var request = "GET /v1/sync\(query) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
        request += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        if let token { request += "Authorization: Bearer \(token)\r\n" }
        request += "\r\n"
        // A 101 keeps the connection open: its head is all there is to read.
        return try await RawHTTP.exchange(port: port, request: request) { $0.hasPrefix("HTTP/1.1 101") && $0.contains("\r\n\r\n") }
    }

    @Test("/metrics takes an admin API key")
    func metricsNeedAdminKey() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let keys = APIKeys(client: db.client, logger: db.logger)
                let admin = try await keys.create(name: "admin")
                let other = try await keys.create(name: "notifier")
                let user = try await server.register("ann@example.com")
                let anonymous = try await server.http.get("/metrics")
                #expect(anonymous.status == 401)
                #expect(anonymous.json?["error"]?["code"] == "unauthenticated")
                #expect(try await server.http.get("/metrics", token: user.accessToken).status == 403)
                #expect(try await server.http.get("/metrics", token: other).status == 403)
                let scraped = try await server.http.get("/metrics", token: admin)
                #expect(scraped.status == 200)
                #expect(scraped.text.contains("psync_sessions"))
            }
        }
    }
}
