import NIOCore
import NIOWebSocket
@testable import SyncServer
import Testing

/// A client's frames into messages, frame by frame, without a socket (``WebSocketInbound``).
@Suite("WebSocket input")
struct WebSocketInboundTests {
    private func frame(_ opcode: WebSocketOpcode, _ bytes: [UInt8], fin: Bool = true, rsv1: Bool = false, masked: Bool = true) -> WebSocketFrame {
        var data = ByteBuffer(bytes: bytes)
        let key: WebSocketMaskingKey? = masked ? WebSocketMaskingKey([0x0F, 0xA0, 0x33, 0x5C]) : nil
        if let key { data.webSocketMask(key) }
        return WebSocketFrame(fin: fin, rsv1: rsv1, opcode: opcode, maskKey: key, data: data)
    }

    private func text(_ string: String, fin: Bool = true) -> WebSocketFrame { frame(.text, Array(string.utf8), fin: fin) }

    @Test("a message in one frame, and one in three, arrive whole and unmasked")
    func messages() {
        var input = WebSocketInbound()
        #expect(input.take(text("{\"type\":\"ping\"}"), limit: 100) == .message(ByteBuffer(string: "{\"type\":\"ping\"}")))
        #expect(input.take(text("ab", fin: false), limit: 100) == .none)
        #expect(input.take(frame(.continuation, Array("cd".utf8), fin: false), limit: 100) == .none)
        #expect(input.take(frame(.continuation, Array("ef".utf8)), limit: 100) == .message(ByteBuffer(string: "abcdef")))
        // Binary messages are taken too; an unmasked one as well.
        #expect(input.take(frame(.binary, [1, 2, 3], masked: false), limit: 100) == .message(ByteBuffer(bytes: [1, 2, 3])))
    }

    @Test("a message of exactly the limit is taken; one byte more is refused with 1009 at the frame that passes it", arguments: [false, true])
    func limit(fragmented: Bool) {
        var input = WebSocketInbound()
        let exact = String(repeating: "x", count: 10)
        if fragmented {
            #expect(input.take(text(String(exact.prefix(6)), fin: false), limit: 10) == .none)
            #expect(input.take(frame(.continuation, Array(exact.suffix(4).utf8)), limit: 10) == .message(ByteBuffer(string: exact)))
            #expect(input.take(text(String(exact.prefix(6)), fin: false), limit: 10) == .none)
            guard case .refuse(.messageTooLarge, _) = input.take(frame(.continuation, Array("12345".utf8), fin: false), limit: 10) else {
                Issue.record("11 bytes in two frames were not refused")
                return
            }
        } else {
            #expect(input.take(text(exact), limit: 10) == .message(ByteBuffer(string: exact)))
            guard case .refuse(.messageTooLarge, _) = input.take(text(exact + "y"), limit: 10) else {
                Issue.record("11 bytes in one frame were not refused")
                return
            }
        }
        // Refused: whatever follows is ignored, but for the client's answering close.
        #expect(input.isOver)
        #expect(input.take(text("late"), limit: 10) == .none)
        #expect(input.take(frame(.connectionClose, [0x03, 0xF1]), limit: 10) == .closed(nil))
        #expect(input.take(frame(.connectionClose, [0x03, 0xF1]), limit: 10) == .none)
    }

    @Test("text that is not UTF-8 is refused with 1007; the same bytes as binary are a message")
    func utf8() {
        var input = WebSocketInbound()
        #expect(input.take(frame(.binary, [0xC3, 0x28]), limit: 100) == .message(ByteBuffer(bytes: [0xC3, 0x28])))
        // Split inside a character: valid once whole.
        #expect(input.take(frame(.text, [0x22, 0xC3], fin: false), limit: 100) == .none)
        #expect(input.take(frame(.continuation, [0xA9, 0x22]), limit: 100) == .message(ByteBuffer(bytes: [0x22, 0xC3, 0xA9, 0x22])))
        guard case .refuse(.dataInconsistentWithMessage, _) = input.take(frame(.text, [0xC3, 0x28]), limit: 100) else {
            Issue.record("invalid UTF-8 text was not refused")
            return
        }
    }

    @Test("protocol violations are refused with 1002", arguments: 0..<6)
    func violations(case number: Int) {
        var input = WebSocketInbound()
        let action: WebSocketInbound.Action
        switch number {
        case 0: action = input.take(frame(.continuation, [1]), limit: 100)
        case 1:
            _ = input.take(text("a", fin: false), limit: 100)
            action = input.take(text("b"), limit: 100)
        case 2: action = input.take(frame(.text, [0x61], rsv1: true), limit: 100)
        case 3: action = input.take(frame(.ping, [], fin: false), limit: 100)
        case 4: action = input.take(frame(.connectionClose, [0x03]), limit: 100)
        default: action = input.take(frame(.connectionClose, [0x03, 0xED]), limit: 100)  // 1005 is never sent
        }
        guard case .refuse(.protocolError, _) = action else {
            Issue.record("case \(number): \(action)")
            return
        }
    }

    @Test("a ping is answered with its payload, a pong is ignored, a control frame may come between a message's frames")
    func control() {
        var input = WebSocketInbound()
        #expect(input.take(text("ab", fin: false), limit: 100) == .none)
        #expect(input.take(frame(.ping, [7, 8]), limit: 100) == .pong(ByteBuffer(bytes: [7, 8])))
        #expect(input.take(frame(.pong, [1]), limit: 100) == .none)
        #expect(input.take(frame(.continuation, Array("c".utf8)), limit: 100) == .message(ByteBuffer(string: "abc")))
    }

    @Test("a close is answered with its code, or with none when it had none; nothing is taken after it")
    func close() {
        var withCode = WebSocketInbound()
        #expect(withCode.take(frame(.connectionClose, [0x03, 0xE8] + Array("bye".utf8)), limit: 100) == .closed(.normalClosure))
        #expect(withCode.take(text("after"), limit: 100) == .none)
        var without = WebSocketInbound()
        #expect(without.take(frame(.connectionClose, []), limit: 100) == .closed(nil))
        var application = WebSocketInbound()
        #expect(application.take(frame(.connectionClose, [0x0F, 0xA0]), limit: 100) == .closed(.unknown(4000)))
        var badReason = WebSocketInbound()
        guard case .refuse(.dataInconsistentWithMessage, _) = badReason.take(frame(.connectionClose, [0x03, 0xE8, 0xFF]), limit: 100) else {
            Issue.record("a close reason that is not UTF-8 was not refused")
            return
        }
    }
}
