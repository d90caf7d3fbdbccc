import Logging
import NIOCore
import NIOWebSocket

/// A session's WebSocket connection after the upgrade: frames in, the session's queue out,
/// on the connection's event loop, with no task of its own.
///
/// A task keeps every slab its stack grew to for as long as it lives, and a session that held
/// one to read and one to write kept ~25 kB of stacks while idle (docs/PERFORMANCE.md, "What
/// an idle session holds"). Here the connection reads into ``WebSocketInbound``, hands each
/// whole message to the session (whose reader task runs only while messages wait), answers
/// pings and closes, and writes what the session queued whenever the socket takes more
/// (``SessionConnection/wakeWriter()``, and writability): at the pace the client reads.
///
/// While the session has messages waiting, the connection reads no more: a client that
/// sends faster than its messages are handled waits in TCP, not in the server's memory.
final class SessionChannelHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let session: SyncSession
    private let maximumFrameBytes: Int
    private var inbound = WebSocketInbound()
    private var context: ChannelHandlerContext?
    /// The session asked to read no more until its waiting messages are handled.
    private var readingPaused = false
    /// A read the pipeline asked for while paused, issued when reading resumes.
    private var readWanted = false
    /// A close frame was written: nothing is written after it.
    private var closeSent = false
    /// The session's message limit once it changes no more (after `auth`); until then the
    /// session is asked at each frame, as `auth` may succeed between two.
    private var finalMessageLimit: Int?

    init(session: SyncSession, maximumFrameBytes: Int) {
        self.session = session
        self.maximumFrameBytes = maximumFrameBytes
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        session.connected(SessionConnection(handler: self, eventLoop: context.eventLoop))
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: Input

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch inbound.take(frame, limit: messageLimit()) {
        case .none:
            break
        case .message(let bytes):
            if session.arrived(bytes) == .pause { readingPaused = true }
        case .pong(let payload):
            guard !closeSent else { break }
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: payload)), promise: nil)
        case .closed(let code):
            // The client closed: the session ends, its close is answered, and the connection
            // closes once the answer is written.
            session.inputEnded()
            if closeSent {
                context.close(promise: nil)
            } else {
                closeSent = true
                let frame = Self.closeFrame(code, reason: nil, allocator: context.channel.allocator)
                let channel = context.channel
                context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in channel.close(promise: nil) }
            }
        case .refuse(let code, let reason):
            session.logger.debug("session input refused", metadata: ["code": "\(code)", "reason": "\(reason)"])
            session.inputEnded()
            sendClose(code, reason: reason, context: context)
        }
    }

    /// The most bytes the message being read may have.
    private func messageLimit() -> Int {
        if let finalMessageLimit { return finalMessageLimit }
        let limit = session.messageLimit
        if limit.isFinal { finalMessageLimit = limit.bytes }
        return limit.bytes
    }

    func read(context: ChannelHandlerContext) {
        if readingPaused {
            readWanted = true
        } else {
            context.read()
        }
    }

    /// The session handled the messages that waited: read on.
    fileprivate func resumeReading() {
        guard readingPaused, let context else { return }
        readingPaused = false
        if readWanted {
            readWanted = false
            context.read()
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        switch event {
        case ChannelEvent.inputClosed:
            // The client's side of the connection ended without a close frame (or after ours).
            session.inputEnded()
            context.close(promise: nil)
        case is ChannelShouldQuiesceEvent:
            // The HTTP server stops, after the sessions' wind-down (each closed with 1001 once
            // its upload was answered, within the shutdown timeout): one still open closes now,
            // with its close frame if it has not sent one, without waiting for the client's.
            session.beginShutdown()
            writeQueued()
            context.close(promise: nil)
        default:
            context.fireUserInboundEventTriggered(event)
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        session.logger.debug("session connection failed", metadata: ["error": "\(error)"])
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        session.disconnected()
        context.fireChannelInactive()
    }

    // MARK: Output

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { writeQueued() }
        context.fireChannelWritabilityChanged()
    }

    /// Writes what the session queued while the socket takes more, then flushes.
    fileprivate func writeQueued() {
        guard let context else { return }
        session.writerLooks()
        var wrote = false
        defer { if wrote { context.flush() } }
        while !closeSent, context.channel.isWritable, let item = session.takeNextItem() {
            wrote = true
            switch item {
            case .reply(let text):
                writeText(ByteBuffer(string: text), context: context)
            case .page(let page):
                writeText(page.bytes, context: context)
                session.pageWritten(page)
            case .close(let code, let reason):
                sendClose(code, reason: reason, context: context)
                wrote = false
            }
        }
    }

    /// Writes a text message from its UTF-8 bytes as they are (the same buffer may go to many
    /// sessions), in frames of at most the configured size.
    private func writeText(_ bytes: ByteBuffer, context: ChannelHandlerContext) {
        var rest = bytes
        var opcode = WebSocketOpcode.text
        while true {
            let last = rest.readableBytes <= maximumFrameBytes
            let data = last ? rest : rest.readSlice(length: maximumFrameBytes)!
            context.write(wrapOutboundOut(WebSocketFrame(fin: last, opcode: opcode, data: data)), promise: nil)
            if last { return }
            opcode = .continuation
        }
    }

    /// Writes the close frame and ends the output: the client answers with its own close (or
    /// closes the connection), and the session's sweep closes a connection whose client does
    /// not within the close timeout.
    private func sendClose(_ code: WebSocketErrorCode, reason: String?, context: ChannelHandlerContext) {
        guard !closeSent else { return }
        closeSent = true
        session.closeSent()
        let frame = Self.closeFrame(code, reason: reason, allocator: context.channel.allocator)
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(frame)).whenComplete { _ in
            channel.close(mode: .output, promise: nil)
        }
    }

    /// Closes the connection now (a client that did not answer the close in time).
    fileprivate func closeNow() {
        context?.close(promise: nil)
    }

    private static func closeFrame(_ code: WebSocketErrorCode?, reason: String?, allocator: ByteBufferAllocator) -> WebSocketFrame {
        var payload = allocator.buffer(capacity: 2 + (reason?.utf8.count ?? 0))
        if let code {
            payload.write(webSocketErrorCode: code)
            // A reason fits in a control frame's 125 bytes.
            if let reason { payload.writeString(String(decoding: reason.utf8.prefix(123), as: UTF8.self)) }
        }
        return WebSocketFrame(fin: true, opcode: .connectionClose, data: payload)
    }
}

/// What a session holds of its connection: a way to ask its event loop to write, to read on,
/// or to close. Any task may use it.
struct SessionConnection: Sendable {
    private let handler: NIOLoopBound<SessionChannelHandler>
    private let eventLoop: any EventLoop

    fileprivate init(handler: SessionChannelHandler, eventLoop: any EventLoop) {
        self.handler = NIOLoopBound(handler, eventLoop: eventLoop)
        self.eventLoop = eventLoop
    }

    /// Items were queued: write them as the socket takes them.
    func wakeWriter() {
        eventLoop.execute { [handler] in handler.value.writeQueued() }
    }

    /// The messages that waited were handled: read more.
    func resumeReading() {
        eventLoop.execute { [handler] in handler.value.resumeReading() }
    }

    /// Closes the connection at once.
    func close() {
        eventLoop.execute { [handler] in handler.value.closeNow() }
    }
}
