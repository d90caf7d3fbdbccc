import HTTPTypes
import Locking
import NIOCore
import NIOHTTPTypes
import PartitionSync
import SyncProtocol

/// Connections whose WebSocket upgrade was refused for a bad credential. The WebSocket layer
/// answers every refused upgrade with a bare 400; the protocol answers a bad credential with
/// 401 and the error body. The upgrade route records the error here, and the connection's
/// ``UpgradeRefusalHandler`` turns that 400 into the 401.
final class UpgradeRefusals: Sendable {
    private let errors = Locked<[ObjectIdentifier: SyncError]>([:])

    /// Records why the connection's upgrade is refused.
    func refuse(_ channel: any Channel, _ error: SyncError) {
        errors.withLock { $0[ObjectIdentifier(channel)] = error }
    }

    /// The refusal of the connection, forgotten as it is taken.
    func take(_ channel: any Channel) -> SyncError? {
        errors.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// A handler for one connection's HTTP pipeline.
    func makeHandler() -> UpgradeRefusalHandler { UpgradeRefusalHandler(refusals: self) }
}

/// Rewrites the refused upgrade's 400 into the recorded error's status and body.
final class UpgradeRefusalHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let refusals: UpgradeRefusals
    /// The error body to write before the end of the rewritten response.
    private var body: ByteBuffer?

    init(refusals: UpgradeRefusals) {
        self.refusals = refusals
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head) where head.status == .badRequest:
            guard let error = refusals.take(context.channel) else { break }
            let bytes = ByteBuffer(bytes: error.httpBody.jsonBytes)
            head.status = error.code.httpStatus
            head.headerFields[.contentType] = "application/json"
            head.headerFields[.contentLength] = "\(bytes.readableBytes)"
            body = bytes
            context.write(wrapOutboundOut(.head(head)), promise: promise)
            return
        case .end where body != nil:
            context.write(wrapOutboundOut(.body(body!)), promise: nil)
            body = nil
        default:
            break
        }
        context.write(data, promise: promise)
    }

    func channelInactive(context: ChannelHandlerContext) {
        _ = refusals.take(context.channel)
        context.fireChannelInactive()
    }
}
