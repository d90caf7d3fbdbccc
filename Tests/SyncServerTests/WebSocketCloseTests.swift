import Foundation
import PartitionSync
import SyncProtocol
@testable import SyncServer
import SyncTesting
import Testing

/// The close handshake of a session's connection, seen from a client that sends raw frames.
@Suite("WebSocket close", .timeLimit(.minutes(30)))
struct WebSocketCloseTests {
    /// A client frame, masked as clients must.
    private static func frame(opcode: UInt8, _ payload: [UInt8]) -> [UInt8] {
        let mask: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]
        precondition(payload.count < 126)
        return [0x80 | opcode, 0x80 | UInt8(payload.count)] + mask + payload.enumerated().map { $0.element ^ mask[$0.offset % 4] }
    }

    private static func upgraded(_ port: Int) async throws -> RawSocket {
        let socket = try RawSocket(port: port)
        let handshake = "GET /v1/sync HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        try socket.send(Array(handshake.utf8))
        let response = try await socket.receive(until: { String(decoding: $0, as: UTF8.self).contains("\r\n\r\n") })
        #expect(String(decoding: response, as: UTF8.self).hasPrefix("HTTP/1.1 101"))
        return socket
    }

    /// Whether the server's bytes hold a close frame with `code` (server frames are unmasked).
    private static func containsClose(_ code: UInt16, in bytes: [UInt8]) -> Bool {
        bytes.indices.contains { index in
            index + 4 <= bytes.count && bytes[index] == 0x88 && bytes[index + 1] >= 2 && bytes[index + 1] < 126
                && bytes[index + 2] == UInt8(code >> 8) && bytes[index + 3] == UInt8(code & 0xFF)
        }
    }

    /// Waits (bounded) until the server has no open session.
    private static func sessionsEnd(_ server: TestServer) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(30)
        while server.server.sessionCount > 0, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(20)) }
        return server.server.sessionCount == 0
    }

    @Test("a client's close is answered with its code, and the session ends")
    func clientCloses() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let socket = try await Self.upgraded(server.port)
                defer { socket.close() }
                try socket.send(Self.frame(opcode: 0x8, [0x0F, 0xA5] + Array("done".utf8)))  // 4005
                let answer = try await socket.receive(until: { $0.count >= 4 })
                #expect(Array(answer.prefix(4)) == [0x88, 0x02, 0x0F, 0xA5])
                #expect(try await Self.sessionsEnd(server))
            }
        }
    }

    @Test("a client that does not answer the server's close has its connection closed once the close timeout has passed")
    func unansweredClose() async throws {
        let clock = MockClock()
        try await TestDatabase.with { db in
            try await TestServer.with(
                database: db.url,
                configure: { configuration in
                    configuration.time = clock.time
                    configuration.sessions.closeTimeout = .seconds(10)
                }
            ) { server in
                let socket = try await Self.upgraded(server.port)
                defer { socket.close() }
                // A bad `auth`: an error, then the close frame (4001).
                try socket.send(Self.frame(opcode: 0x1, Array(#"{"type":"auth","token":"no"}"#.utf8)))
                let received = try await socket.receive(until: { Self.containsClose(4001, in: $0) })
                #expect(Self.containsClose(4001, in: received))
                // The client keeps its side open and says nothing.
                clock.advance(by: .seconds(9))
                server.server.sweepSessions()
                #expect(server.server.sessionCount == 1)
                clock.advance(by: .seconds(2))
                server.server.sweepSessions()
                #expect(try await Self.sessionsEnd(server), "the connection stayed open past the close timeout")
            }
        }
    }
}
