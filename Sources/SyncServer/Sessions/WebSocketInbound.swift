import NIOCore
import NIOWebSocket

/// A client's WebSocket frames, put together into messages, with its control frames answered:
/// a value without I/O, driven by the connection's ``SessionChannelHandler`` one frame at a
/// time, each step answering what the handler does (hand a message to the session, answer a
/// ping, answer a close, or refuse the input with a close code). Tested frame by frame in
/// `WebSocketInboundTests`.
///
/// What it refuses, with the code RFC 6455 gives:
/// - a message longer than the limit the handler passes with each frame (the session's
///   limit, smaller before `auth`): 1009, checked at every frame, as soon as one takes the
///   message past it, before the rest is read;
/// - a text message that is not UTF-8, or a close reason that is not: 1007;
/// - reserved bits (no extension is negotiated), an unknown opcode, a continuation without a
///   message to continue, a new message before the last one ended, a fragmented control
///   frame, a close payload of one byte or with a code no endpoint may send: 1002.
///
/// Once the client closed, or its input was refused, every further frame is ignored, but for
/// the close that answers a refusal.
struct WebSocketInbound {
    enum Action: Equatable {
        /// Nothing to do yet (a frame of a message not finished, a pong, ignored input).
        case none
        /// A whole message (text or binary), its bytes as sent.
        case message(ByteBuffer)
        /// Answer a ping with a pong of the same payload.
        case pong(ByteBuffer)
        /// The client closes: answer with a close frame (of the code it sent, if any) and end.
        case closed(WebSocketErrorCode?)
        /// Refuse the input: close with this code.
        case refuse(WebSocketErrorCode, String)
    }

    /// The message being put together from its frames.
    private var partial: ByteBuffer?
    private var partialIsText = false
    /// The client closed, or its input was refused.
    private(set) var isOver = false
    /// Its input was refused, and its close not yet received.
    private var isRefused = false

    /// Takes one frame (its payload unmasked). `limit` is the most bytes a message may have.
    mutating func take(_ frame: WebSocketFrame, limit: Int) -> Action {
        guard !isOver else {
            // After a refusal, the client's answering close ends the connection.
            if isRefused, frame.opcode == .connectionClose {
                isRefused = false
                return .closed(nil)
            }
            return .none
        }
        if frame.rsv1 || frame.rsv2 || frame.rsv3 { return refuse(.protocolError, "reserved bits set") }
        switch frame.opcode {
        case .ping:
            guard frame.fin else { return refuse(.protocolError, "a fragmented ping") }
            return .pong(frame.unmaskedData)
        case .pong:
            guard frame.fin else { return refuse(.protocolError, "a fragmented pong") }
            return .none
        case .connectionClose:
            guard frame.fin else { return refuse(.protocolError, "a fragmented close") }
            return closeReceived(frame.unmaskedData)
        case .text, .binary:
            guard partial == nil else { return refuse(.protocolError, "a new message began before the last one ended") }
            guard frame.length <= limit else { return tooLarge(limit) }
            let data = frame.unmaskedData
            if frame.fin { return finished(data, isText: frame.opcode == .text) }
            partial = data
            partialIsText = frame.opcode == .text
            return .none
        case .continuation:
            guard var data = partial else { return refuse(.protocolError, "a continuation frame without a message") }
            guard data.readableBytes + frame.length <= limit else { return tooLarge(limit) }
            var more = frame.unmaskedData
            partial = nil  // uniquely referenced while it grows
            data.writeBuffer(&more)
            if frame.fin { return finished(data, isText: partialIsText) }
            partial = data
            return .none
        default:
            return refuse(.protocolError, "an unknown opcode")
        }
    }

    private mutating func finished(_ data: ByteBuffer, isText: Bool) -> Action {
        partial = nil
        if isText, String(validating: data.readableBytesView, as: UTF8.self) == nil {
            return refuse(.dataInconsistentWithMessage, "a text message that is not UTF-8")
        }
        return .message(data)
    }

    private mutating func tooLarge(_ limit: Int) -> Action {
        refuse(.messageTooLarge, "a message has at most \(limit) bytes")
    }

    private mutating func closeReceived(_ payload: ByteBuffer) -> Action {
        var payload = payload
        guard payload.readableBytes > 0 else {
            isOver = true
            return .closed(nil)
        }
        guard payload.readableBytes >= 2, let raw = payload.readInteger(as: UInt16.self) else {
            return refuse(.protocolError, "a close frame of one byte")
        }
        guard Self.maySend(raw) else { return refuse(.protocolError, "a close code no endpoint sends") }
        if String(validating: payload.readableBytesView, as: UTF8.self) == nil {
            return refuse(.dataInconsistentWithMessage, "a close reason that is not UTF-8")
        }
        isOver = true
        return .closed(WebSocketErrorCode(codeNumber: Int(raw)))
    }

    private mutating func refuse(_ code: WebSocketErrorCode, _ reason: String) -> Action {
        isOver = true
        isRefused = true
        partial = nil
        return .refuse(code, reason)
    }

    /// Whether a close frame may carry the code: those RFC 6455 defines for endpoints to send,
    /// and the ranges for libraries and applications (3000–4999).
    static func maySend(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1011: true
        case 3000...4999: true
        default: false
        }
    }
}
