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

/// The gates of connections between their upgrade and their session.
final class FrameGates: Sendable {
    private let gates = Locked<[ObjectIdentifier: FrameGate]>([:])

    /// Puts a gate at the front of the connection's pipeline (before the WebSocket decoder that
    /// the upgrade adds) and keeps it for the session.
    func install(on channel: any Channel, limit: Int) async throws {
        let gate = FrameGate()
        gates.withLock { $0[ObjectIdentifier(channel)] = gate }
        // Made and added on the channel's event loop, where a handler lives.
        try await channel.eventLoop.submit {
            try channel.pipeline.syncOperations.addHandler(FrameGateHandler(gate: gate, limit: limit, gates: self), position: .first)
        }.get()
    }

    /// The connection's gate, forgotten as it is taken.
    func take(_ channel: any Channel) -> FrameGate? {
        gates.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }
}

/// The gate on the connection's raw bytes; removes itself once the gate is open.
final class FrameGateHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    private let gate: FrameGate
    private let gates: FrameGates
    private var scanner: FrameHeaderScanner
    private var refused = false

    init(gate: FrameGate, limit: Int, gates: FrameGates) {
        self.gate = gate
        self.gates = gates
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

    func channelInactive(context: ChannelHandlerContext) {
        _ = gates.take(context.channel)
        context.fireChannelInactive()
    }

    private func wrapOutbound(_ buffer: ByteBuffer) -> NIOAny { NIOAny(buffer) }
}
