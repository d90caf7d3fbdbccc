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

    /// The status line (and what follows) of a WebSocket upgrade request sent on a raw socket.
    static func upgradeStatus(port: Int, token: String?) async throws -> (status: Int, text: String) {
        try await Task.detached {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            defer { close(fd) }
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard connected == 0 else { throw TestTimeout(what: "a connection") }
            var timeout = timeval(tv_sec: 20, tv_usec: 0)
            setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            var request = "GET /v1/sync HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
            request += "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            if let token { request += "Authorization: Bearer \(token)\r\n" }
            request += "\r\n"
            _ = request.withCString { send(fd, $0, strlen($0), 0) }
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 4096)
            while true {
                let count = recv(fd, &buffer, buffer.count, 0)
                if count <= 0 { break }
                received += buffer[0..<count]
                let text = String(decoding: received, as: UTF8.self)
                // A 101 keeps the connection open: its head is all there is to read.
                if text.hasPrefix("HTTP/1.1 101"), text.contains("\r\n\r\n") { break }
            }
            let text = String(decoding: received, as: UTF8.self)
            let status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
            return (status, text)
        }.value
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
