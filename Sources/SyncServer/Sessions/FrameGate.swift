import Locking
import NIOCore
import PartitionSync
import Synchronization

/// Holds a connection that has not authenticated to small WebSocket frames. The WebSocket
/// decoder accepts frames as long as a whole message (``SessionConfiguration/maximumMessageBytes``,
/// since browsers send a message as one frame), but reads each frame whole before anyone sees
/// it; before `auth` succeeds the gate refuses, from its header, any frame longer than
/// ``SessionConfiguration/unauthenticatedMessageBytes`` (close 1009), so an unauthenticated
/// client cannot make the server read a large message. The session opens the gate once it is
/// authenticated; a connection authenticated at the upgrade never has one.
final class FrameGate: Sendable {
    private let isOpen = Atomic<Bool>(false)

    /// Lets every frame through from now on.
    func open() { isOpen.store(true, ordering: .releasing) }

    var opened: Bool { isOpen.load(ordering: .acquiring) }
}

extension FrameGate {
    /// Puts a gate at the front of the connection's pipeline (before the WebSocket decoder that
    /// the upgrade adds), for the session to open.
    static func install(on channel: any Channel, limit: Int) async throws -> FrameGate {
        let gate = FrameGate()
        // Made and added on the channel's event loop, where a handler lives.
        try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.addHandler(FrameGateHandler(gate: gate, limit: limit), position: .first)
        }.get()
        return gate
    }
}

/// The gate on the connection's raw bytes; removes itself once the gate is open.
final class FrameGateHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let gate: FrameGate
    private var scanner: FrameHeaderScanner
    private var refused = false

    init(gate: FrameGate, limit: Int) {
        self.gate = gate
        self.scanner = FrameHeaderScanner(limit: limit)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard !refused else { return }
        if gate.opened {
            context.fireChannelRead(data)
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            return
        }
        let bytes = unwrapInboundIn(data)
        if case .refuse = scanner.scan(bytes.readableBytesView) {
            // Close 1009 (message too big), written as a raw server frame: 0x88, length 2, code.
            refused = true
            context.writeAndFlush(wrapOutbound(ByteBuffer(bytes: [0x88, 0x02, 0x03, 0xF1])), promise: nil)
            context.close(promise: nil)
            return
        }
        context.fireChannelRead(data)
    }

    private func wrapOutbound(_ buffer: ByteBuffer) -> NIOAny { NIOAny(buffer) }
}
