import Foundation
import PartitionSync

#if canImport(Glibc)
import Glibc
#endif
import NIOCore
import PostgresNIO
import NIOWebSocket
import WSCore
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Every upload gets exactly one answer carrying its request id, and a message as large as the
/// documented limit arrives in one frame, as browsers send it.
@Suite("Upload answers", .timeLimit(.minutes(30)))
struct UploadAnswerTests {
    /// Malformed operations of the fault-tolerance review, each in an otherwise sound upload.
    static let malformed: [(String, String)] = [
        ("collection", #"{"op":"put","collection":"User; DROP","id":"i","body":{}}"#),
        ("empty id", #"{"op":"put","collection":"Note","id":"","body":{}}"#),
        ("body", #"{"op":"put","collection":"Note","id":"i","body":[1]}"#),
        ("empty path", #"{"op":"set","collection":"Note","id":"i","path":"","value":1}"#),
        ("increment by a string", #"{"op":"increment","collection":"Note","id":"i","path":"n","by":"1"}"#),
        ("unknown op", #"{"op":"explode","collection":"Note","id":"i"}"#),
    ]

    @Test("a malformed operation is answered `rejected` with the upload's request id, over WebSocket and HTTP; pipelined uploads keep their answers")
    func malformedOperations() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let mine = "user=\(alice.userID)"
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                // Pipelined: a good upload, each malformed one, a good one.
                let good = #"{"op":"put","collection":"Note","id":"n","body":{"text":"hi"}}"#
                var sent = ["good-1"]
                client.send(text: #"{"type":"upload","requestId":"good-1","partition":"\#(mine)","operations":[\#(good)]}"#)
                for (name, operation) in Self.malformed {
                    sent.append(name)
                    client.send(text: #"{"type":"upload","requestId":"\#(name)","partition":"\#(mine)","operations":[\#(good),\#(operation)]}"#)
                }
                sent.append("good-2")
                client.send(text: #"{"type":"upload","requestId":"good-2","partition":"\#(mine)","operations":[\#(good)]}"#)
                var answered: [String: ServerMessage] = [:]
                while answered.count < sent.count {
                    let message = try await client.next()
                    switch message {
                    case .ack(let id, _, _, _), .rejected(let id, _, _, _):
                        #expect(answered[id] == nil, "two answers for \(id)")
                        answered[id] = message
                    default:
                        Issue.record("unexpected \(message)")
                    }
                }
                #expect(answered["good-1"]?.isAck == true && answered["good-2"]?.isAck == true)
                for (name, _) in Self.malformed {
                    guard case .rejected(_, let partition, let error, _)? = answered[name] else { Issue.record("\(name): \(String(describing: answered[name]))"); continue }
                    #expect(partition.description == mine)
                    #expect(error.code != .internal && error.code != .unavailable, "\(name): \(error)")
                }
                // Over HTTP: the same `rejected` body, with its request id and a 4xx status.
                let path = "/v1/partitions/user%3D\(alice.userID)/uploads"
                for (name, operation) in Self.malformed {
                    let body = Data(#"{"requestId":"http-\#(name)","operations":[\#(operation)]}"#.utf8)
                    let response = try await server.http.request("POST", path, body: body, token: alice.accessToken)
                    #expect((400..<500).contains(response.status), "\(name): \(response.status)")
                    #expect(response.json?["type"] == "rejected" && response.json?["requestId"] == .string("http-\(name)"), "\(name): \(response.text)")
                }
                await client.close()
            }
        }
    }

    @Test("after auth a message of several MiB arrives in one frame; an upload over the body limit is `rejected` `payload_too_large` with its request id")
    func largeSingleFrames() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let alice = try await server.register("alice@example.com")
                let mine = "user=\(alice.userID)"
                // The `auth` message, as a browser authenticates (it cannot set headers).
                let client = try await server.connect(token: nil)
                client.send(.auth(token: alice.accessToken))
                #expect(try await client.next() == .ready(userId: alice.userID))
                func single(_ text: String) {
                    var buffer = ByteBuffer()
                    buffer.writeString(text)
                    client.send(frame: .custom(WebSocketFrame(fin: true, opcode: .text, data: buffer)))
                }
                // Three objects of 900 KB: 2.7 MB in one frame.
                let text = String(repeating: "x", count: 900_000)
                let operations = (0..<3).map { #"{"op":"put","collection":"Note","id":"big-\#($0)","body":{"text":"\#(text)"}}"# }
                single(#"{"type":"upload","requestId":"big","partition":"\#(mine)","operations":[\#(operations.joined(separator: ","))]}"#)
                guard case .ack(let id, _, _, _) = try await client.next(timeout: .seconds(30)) else { Issue.record("no ack"); return }
                #expect(id == "big")
                // One body over 1 MiB: refused, with its request id, and the session goes on.
                let huge = String(repeating: "y", count: 1_200_000)
                single(#"{"type":"upload","requestId":"huge","partition":"\#(mine)","operations":[{"op":"put","collection":"Note","id":"huge","body":{"text":"\#(huge)"}}]}"#)
                let answer = try await client.next(timeout: .seconds(30))
                guard case .rejected(let rejectedID, _, let error, _) = answer else { Issue.record("\(answer)"); return }
                #expect(rejectedID == "huge" && error.code == .payloadTooLarge)
                client.send(.ping(nonce: "still here"))
                #expect(try await client.next() == .pong(nonce: "still here"))
                #expect(try await db.store().body(of: key("Note", "big-2"))?["text"]?.stringValue?.count == 900_000)
                await client.close()
            }
        }
    }

    @Test("a session with as many uploads waiting as allowed is not read until one is applied; below the limit it is", arguments: [4, 64])
    func queuedUploadLimit(limit: Int) async throws {
        try await TestDatabase.with { db in
            // The test holds the partition's lock for 2 s and more; the uploads must wait for it,
            // not give up after the default 2 s of lock patience (`unavailable`), which under
            // load they did: this test is about the queue, not the patience.
            try await TestServer.with(database: db.url, configure: {
                $0.sessions.maximumQueuedUploads = limit
                $0.storage.lockPatience = .seconds(120)
            }) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                func upload(_ id: String) -> ClientMessage {
                    .upload(requestId: id, partition: mine, operations: [.put(key("Note", id), body: [:])])
                }
                client.send(upload("warm"))
                #expect(try await client.next().isAck)
                // Another transaction holds the partition's row: uploads to it wait.
                try await db.client.withConnection { connection in
                    try await connection.query("BEGIN", logger: db.logger)
                    try await connection.query("UPDATE psync_partitions SET updated_at = now() WHERE partition = \(mine.description)", logger: db.logger)
                    for n in 0..<10 { client.send(upload("u\(n)")) }
                    client.send(.ping(nonce: "read"))
                    if limit < 10 {
                        // One applying, `limit` waiting: the rest, and the ping, are not read.
                        #expect(try await client.receivesNothing(within: .seconds(2)))
                    } else {
                        #expect(try await client.next(timeout: .seconds(20)) == .pong(nonce: "read"))
                    }
                    try await connection.query("ROLLBACK", logger: db.logger)
                }
                var acks = 0
                var ponged = limit >= 10
                while acks < 10 || !ponged {
                    switch try await client.next(timeout: .seconds(20)) {
                    case .ack: acks += 1
                    case .pong:
                        // Read only once an upload was applied and the queue had room.
                        #expect(acks >= 1, "the ping was read before the queue had room")
                        ponged = true
                    case let other: Issue.record("unexpected \(other)")
                    }
                }
                await client.close()
            }
        }
    }

    @Test("an upload whose transaction outlives the upload timeout is answered unavailable, the next uploads go on, and its resend applies once")
    func uploadTimeout() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { $0.uploadTimeout = .seconds(3) }) { server in
                let alice = try await server.register("alice@example.com")
                let bob = try await server.register("bob@example.com")
                let mine = "user%3D\(alice.userID)"
                func upload(_ requestId: String, _ operation: JSONValue, to path: String, token: String) async throws -> TestHTTPClient.Response {
                    let body: JSONValue = ["requestId": .string(requestId), "operations": [operation]]
                    return try await server.http.request("POST", "/v1/partitions/\(path)/uploads", body: Data(body.jsonBytes), token: token)
                }
                // Sent again while it is answered `unavailable`, as a client does until it is
                // acknowledged: on a loaded machine an upload nothing holds up may outlive the
                // timeout too.
                func acknowledged(_ requestId: String, _ operation: JSONValue) async throws -> TestHTTPClient.Response {
                    var response = try await upload(requestId, operation, to: mine, token: alice.accessToken)
                    for _ in 0..<20 where response.status == 503 {
                        #expect(response.json?["error"]?["code"] == "unavailable", "\(response.status) \(response.text)")
                        response = try await upload(requestId, operation, to: mine, token: alice.accessToken)
                    }
                    return response
                }
                let increment: JSONValue = ["op": "increment", "collection": "Note", "id": "c", "path": "n", "by": 1]
                #expect(try await acknowledged("create", ["op": "put", "collection": "Note", "id": "c", "body": ["n": 0]]).status == 200)
                try await db.client.withConnection { connection in
                    // Another transaction holds the partition: the increment waits past its timeout.
                    try await connection.query("BEGIN", logger: db.logger)
                    try await connection.query("UPDATE psync_partitions SET updated_at = now() WHERE partition = \("user=\(alice.userID)")", logger: db.logger)
                    let late = try await upload("inc", increment, to: mine, token: alice.accessToken)
                    #expect(late.status == 503 && late.json?["error"]?["code"] == "unavailable", "\(late.status) \(late.text)")
                    // Other partitions' uploads are not held up behind it.
                    let other = try await upload("b1", ["op": "put", "collection": "Note", "id": "b", "body": [:]], to: "user%3D\(bob.userID)", token: bob.accessToken)
                    #expect(other.status == 200)
                    try await connection.query("ROLLBACK", logger: db.logger)
                }
                // Sent again: acknowledged, applied once, however many times it was sent.
                let resent = try await acknowledged("inc", increment)
                #expect(resent.status == 200, "\(resent.status) \(resent.text)")
                #expect(try await upload("inc", increment, to: mine, token: alice.accessToken).status == 200)
                #expect(try await TestTriggers.eventually { try await db.store().body(of: key("Note", "c"))?["n"] == 1 })
                try await Task.sleep(for: .milliseconds(500))
                #expect(try await db.store().body(of: key("Note", "c"))?["n"] == 1)
            }
        }
    }

    @Test("before auth a frame longer than the limit is refused from its header, without the server waiting for its payload")
    func unauthenticatedLongFrame() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url) { server in
                let socket = try RawSocket(port: server.port)
                defer { socket.close() }
                let handshake = "GET /v1/sync HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
                try socket.send(Array(handshake.utf8))
                let response = try await socket.receive(until: { String(decoding: $0, as: UTF8.self).contains("\r\n\r\n") })
                #expect(String(decoding: response, as: UTF8.self).hasPrefix("HTTP/1.1 101"))
                // A text frame that says it holds 1 MiB; only its header and 10 bytes are sent.
                let length = 1 << 20
                let header: [UInt8] = [0x81, 0x80 | 127] + (0..<8).reversed().map { UInt8((UInt64(length) >> (8 * UInt64($0))) & 0xFF) } + [9, 9, 9, 9]
                try socket.send(header + [UInt8](repeating: 0x20, count: 10))
                // The server closes at once with 1009: it does not wait for the rest of the frame.
                let closing = try await socket.receive(until: { $0.count >= 4 })
                #expect(Array(closing.prefix(4)) == [0x88, 0x02, 0x03, 0xF1])
            }
        }
    }
}

/// A plain TCP connection, for bytes no WebSocket client would send.
final class RawSocket {
    let descriptor: Int32

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = UInt16(port).bigEndian
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else { throw SyncError(.unavailable, "cannot connect to port \(port)") }
    }

    func send(_ bytes: [UInt8]) throws {
        let sent = bytes.withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, 0) }
        guard sent == bytes.count else { throw SyncError(.unavailable, "short send") }
    }

    /// Reads until `done` holds for what was read; throws after 20 seconds or at the end of the
    /// stream. It never blocks its thread (a test's thread is one of the few the whole process
    /// runs its tasks on, the server's included): it polls, yielding in between.
    func receive(until done: ([UInt8]) -> Bool) async throws -> [UInt8] {
        var received: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        let deadline = ContinuousClock.now + .seconds(20)
        while !done(received) {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if count < 0, errno == EAGAIN || errno == EWOULDBLOCK, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(5))
                continue
            }
            guard count > 0 else { throw SyncError(.unavailable, "the connection ended after \(received.count) bytes") }
            received += chunk[0..<count]
        }
        return received
    }

    func close() { _ = Glibc.close(descriptor) }
}
