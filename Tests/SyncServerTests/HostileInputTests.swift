import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Malformed and hostile frames over a real WebSocket: each gets an `error` and the session
/// goes on, or the connection closes with a documented code; the server never falls over.
@Suite("Hostile input", .timeLimit(.minutes(30)))
struct HostileInputTests {

    /// One hostile frame and the close codes it may cause (empty: the session must survive).
    enum Frame {
        case text(String)
        case bytes([UInt8], asText: Bool)
    }

    static func hostileFrame(_ random: inout SeededGenerator, partition: String) -> (Frame, allowedCloses: Set<Int>) {
        let valid = #"{"type":"upload","requestId":"r","partition":"\#(partition)","operations":[{"op":"put","collection":"C","id":"i","body":{}}]}"#
        switch Int.random(in: 0..<16, using: &random) {
        case 0: return (.text(String(valid.prefix(Int.random(in: 0..<valid.count, using: &random)))), [])
        case 1: return (.text(#"{"type":\#(["1", "null", "[]", "{}", "true", "\"nope\""].randomElement(using: &random)!)}"#), [])
        case 2: return (.text(#"{"type":"subscribe","partition":\#(["5", "null", "\"x\"", "\"a=b=c\"", "\"K=v\"", "[1]"].randomElement(using: &random)!),"cursor":7}"#), [])
        case 3: return (.text(#"{"type":"upload","requestId":"r","partition":"\#(partition)","operations":[{"op":"increment","collection":"C","id":"i","path":"n","by":1\#(String(repeating: "0", count: Int.random(in: 300...400, using: &random)))}]}"#), [])
        case 4:
            let depth = Int.random(in: 30...5_000, using: &random)
            return (.text(String(repeating: "[", count: depth) + String(repeating: "]", count: depth)), [])
        case 5:
            let depth = Int.random(in: 30...200, using: &random)
            let body = String(repeating: #"{"a":"#, count: depth) + "1" + String(repeating: "}", count: depth)
            return (.text(#"{"type":"upload","requestId":"r","partition":"\#(partition)","operations":[{"op":"put","collection":"C","id":"i","body":\#(body)}]}"#), [])
        case 6: return (.bytes([0x7B, 0x22, 0xC3, 0x28, 0x22, 0x7D], asText: false), [])
        case 7: return (.bytes(Array(#"{"type":"ping","nonce":""#.utf8) + [0xFF, 0xFE] + Array(#""}"#.utf8), asText: true), [1007])
        case 8: return (.text(#"{"type":"\#(["hello", "subscribe_all", "UPLOAD", ""].randomElement(using: &random)!)"}"#), [])
        case 9:
            let bytes = (0..<Int.random(in: 1...64, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }
            return (.bytes(bytes, asText: false), [])
        case 10: return (.text(#"{"type":"upload","requestId":"\#(String(repeating: "r", count: 300))","partition":"\#(partition)","operations":[]}"#), [])
        case 11: return (.text(#"{"type":"upload","requestId":"r","partition":"\#(partition)","operations":[{"op":"set","collection":"C","id":"i","path":"\#(["a..b", "[0]", "a[", "a[-1]", ""].randomElement(using: &random)!)","value":1}]}"#), [])
        case 12: return (.text("\u{0}\u{1}garbage"), [])
        case 13: return (.text(#"{"type":"ping","nonce":1e999}"#), [])
        case 14: return (.text(#"{"type":"upload","requestId":"r","partition":"\#(partition)","operations":"all"}"#), [])
        default: return (.text(String(repeating: "x", count: Int.random(in: 1...50, using: &random))), [])
        }
    }

    @Test("hundreds of seeded hostile frames each get an error or a documented close; the server stays up")
    func randomizedFrames() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, configure: { $0.sessions.maximumMessageBytes = 1 << 20 }) { server in
                var random = SeededGenerator(seed: 424_242)
                let alice = try await server.register("alice@example.com")
                let mine = "user=\(alice.userID)"
                var client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                var errors = 0
                var closes = 0
                for round in 0..<250 {
                    let (frame, allowedCloses) = Self.hostileFrame(&random, partition: mine)
                    switch frame {
                    case .text(let text): client.send(text: text)
                    case .bytes(let bytes, let asText):
                        client.send(bytes: bytes, asText: asText)
                    }
                    client.send(.ping(nonce: .int(Int64(round))))
                    do {
                        while true {
                            let message = try await client.next(timeout: .seconds(10))
                            if message == .pong(nonce: .int(Int64(round))) { break }
                            switch message {
                            case .error(let error, _):
                                #expect(!error.message.contains("SQL") && !error.message.contains("PSQL"), "leaks: \(error.message)")
                                errors += 1
                            case .ack, .rejected, .changes: break
                            default: Issue.record("round \(round): unexpected \(message)")
                            }
                        }
                    } catch is ConnectionClosed {
                        let code = try await client.closeCode()
                        #expect(code.map { allowedCloses.contains($0) } ?? false, "round \(round): closed with \(String(describing: code))")
                        closes += 1
                        client = try await server.connect(token: alice.accessToken)
                        _ = try await client.next()
                    }
                }
                #expect(errors > 100)
                // A message over the size limit closes with 1009.
                client.send(text: #"{"type":"ping","nonce":""# + String(repeating: "x", count: 2 << 20) + #""}"#)
                #expect(try await client.closeCode() == 1009)
                // And the server still serves.
                let fresh = try await server.connect(token: alice.accessToken)
                #expect(try await fresh.next() == .ready(userId: alice.userID))
                fresh.send(.ping(nonce: "alive"))
                #expect(try await fresh.next() == .pong(nonce: "alive"))
                await fresh.close()
                print("hostile input: \(errors) errors answered, \(closes) connections closed")
            }
        }
    }
}

@Suite("Client message decoding")
struct ClientMessageDecodingTests {
    @Test("random JSON values never crash the decoder: each decodes or gives a contract error")
    func randomValues() throws {
        var random = SeededGenerator(seed: 7)
        func value(_ depth: Int) -> JSONValue {
            switch Int.random(in: 0..<(depth > 4 ? 5 : 8), using: &random) {
            case 0: return .null
            case 1: return .bool(Bool.random(using: &random))
            case 2: return .int(Int64.random(in: .min ... .max, using: &random))
            case 3: return .double(Double.random(in: -1e300...1e300, using: &random))
            case 4: return .string(["subscribe", "upload", "ping", "auth", "put", "set", "user=a", "C", "x", "a.b"].randomElement(using: &random)!)
            case 5: return .array((0..<Int.random(in: 0...3, using: &random)).map { _ in value(depth + 1) })
            default:
                var fields: [String: JSONValue] = [:]
                for _ in 0..<Int.random(in: 0...5, using: &random) {
                    let name = ["type", "partition", "cursor", "requestId", "operations", "op", "collection", "id", "path", "value", "body", "nonce", "token"].randomElement(using: &random)!
                    fields[name] = value(depth + 1)
                }
                return .object(fields)
            }
        }
        var decoded = 0
        for _ in 0..<20_000 {
            do {
                _ = try ClientMessage(json: value(0))
                decoded += 1
            } catch {
                #expect(!error.code.rawValue.isEmpty)
            }
        }
        #expect(decoded > 0)
    }
}
