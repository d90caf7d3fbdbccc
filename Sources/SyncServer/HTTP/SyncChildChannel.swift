import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import NIOHTTPTypesHTTP1
import NIOWebSocket
import SyncProtocol

/// One accepted connection of the server: HTTP/1.1 for the routes, or a WebSocket session once
/// `GET /v1/sync` upgrades it.
///
/// The HTTP side is Hummingbird's (its codec, connection state and responder). A WebSocket is
/// served by the session's ``SessionChannelHandler`` on the connection's event loop: once the
/// upgrade is done this connection's task returns, so an idle session holds no task (the
/// stack a connection's task grows to is kept for as long as it lives). An upgrade refused
/// (a bad credential, too many sessions, a server stopping, another path) is answered with
/// its error's status and JSON body, and the connection closes.
struct SyncChildChannel: ServerChildChannel, HTTPChannelHandler {
    /// What became of the connection's first request.
    enum Negotiated: Sendable {
        case http(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>)
        /// Upgraded: the session serves it.
        case webSocket
        case refused(NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>, SyncError)
    }

    struct Value: ServerChildChannelValue {
        let negotiated: EventLoopFuture<Negotiated>
        let channel: any Channel
    }

    let responder: HTTPChannelHandler.Responder
    let upgrade: SessionUpgrade
    let http1: HTTP1Channel.Configuration

    init(responder: @escaping HTTPChannelHandler.Responder, upgrade: SessionUpgrade, http1: HTTP1Channel.Configuration) {
        self.responder = Self.refusingLateUpgrades(responder)
        self.upgrade = upgrade
        self.http1 = http1
    }

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        channel.eventLoop.makeCompletedFuture {
            // What the decision found, for the step that follows it on the same event loop.
            let refusal = NIOLoopBoundBox<SyncError?>(nil, eventLoop: channel.eventLoop)
            let grant = NIOLoopBoundBox<SessionUpgrade.Grant?>(nil, eventLoop: channel.eventLoop)
            let upgrader = NIOTypedWebSocketServerUpgrader<Negotiated>(
                maxFrameSize: upgrade.maximumMessageBytes,
                shouldUpgrade: { [upgrade] channel, head in
                    let promise = channel.eventLoop.makePromise(of: SessionUpgrade.Decision.self)
                    promise.completeWithTask { await upgrade.decide(head, channel: channel) }
                    return promise.futureResult.map { decision in
                        switch decision {
                        case .accept(let granted):
                            grant.value = granted
                            return HTTPHeaders()
                        case .refuse(let error):
                            refusal.value = error
                            return nil
                        }
                    }
                },
                upgradePipelineHandler: { [upgrade] channel, _ in
                    channel.eventLoop.makeCompletedFuture {
                        guard let granted = grant.value else { throw ChannelError.inappropriateOperationForState }
                        grant.value = nil
                        try upgrade.start(granted, on: channel)
                        return Negotiated.webSocket
                    }
                })
            let upgrades = NIOTypedHTTPServerUpgradeConfiguration<Negotiated>(
                upgraders: [upgrader],
                notUpgradingCompletionHandler: { [http1] channel in
                    channel.eventLoop.makeCompletedFuture {
                        let pipeline = channel.pipeline.syncOperations
                        try pipeline.addHandler(HTTP1ToHTTPServerCodec(secure: false))
                        try pipeline.addHandlers(http1.additionalChannelHandlers())
                        try pipeline.addHandler(HTTPConnectionStateHandler(idleTimeout: http1.idleTimeout.map { .init($0) }, logger: logger))
                        let http = try NIOAsyncChannel<HTTPRequestPart, HTTPResponsePart>(
                            wrappingChannelSynchronously: channel, configuration: .init(isOutboundHalfClosureEnabled: true))
                        if let error = refusal.value { return .refused(http, error) }
                        return .http(http)
                    }
                })
            var configuration = NIOUpgradableHTTPServerPipelineConfiguration(upgradeConfiguration: upgrades)
            // As Hummingbird's own HTTP channel: its responder handles pipelining and errors,
            // and HTTP types validate the headers.
            configuration.enablePipelining = false
            configuration.enableErrorHandling = false
            configuration.enableResponseHeaderValidation = false
            configuration.decoderConfiguration.maxHeaderFieldSize = http1.httpDecoder.maxHeaderFieldSize
            configuration.decoderConfiguration.maxHeaderListSize = http1.httpDecoder.maxHeaderListSize
            configuration.decoderConfiguration.maxHeaderFieldCount = http1.httpDecoder.maxHeaderFieldCount
            let negotiated = try channel.pipeline.syncOperations.configureUpgradableHTTPServerPipeline(configuration: configuration)
            return Value(negotiated: negotiated, channel: channel)
        }
    }

    func handle(value: Value, logger: Logger) async {
        do {
            switch try await value.negotiated.get() {
            case .http(let http):
                await handleHTTP(asyncChannel: http, logger: logger)
            case .webSocket:
                return
            case .refused(let http, let error):
                try await http.executeThenClose { _, outbound in
                    let body = ByteBuffer(bytes: error.httpBody.jsonBytes)
                    let head = HTTPResponse(
                        status: error.code.httpStatus,
                        headerFields: [.connection: "close", .contentType: "application/json", .contentLength: "\(body.readableBytes)"])
                    try await outbound.write(contentsOf: [.head(head), .body(body), .end(nil)])
                }
            }
        } catch {
            logger.debug("connection ended before its first request was answered", metadata: ["error": "\(error)"])
        }
    }

    /// NIO offers the upgrade on a connection's first request only: a WebSocket upgrade asked
    /// for on a later request of a kept-alive connection is sent to the same address on a
    /// connection of its own (307, and this one closes).
    private static func refusingLateUpgrades(_ responder: @escaping HTTPChannelHandler.Responder) -> HTTPChannelHandler.Responder {
        { request, writer, channel in
            guard request.headers[.upgrade]?.lowercased() == "websocket" else {
                try await responder(request, writer, channel)
                return
            }
            var location = request.uri.path
            if let query = request.uri.query { location += "?\(query)" }
            try await writer.writeResponse(
                HTTPResponse(status: .temporaryRedirect, headerFields: [.connection: "close", .location: location, .contentLength: "0"]))
            // Thrown to end the connection after the answer.
            throw LateUpgrade()
        }
    }

    private struct LateUpgrade: Error {}
}
