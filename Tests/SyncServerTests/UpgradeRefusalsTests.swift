import HTTPTypes
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import SyncProtocol
import Testing

@testable import SyncServer

/// The rewrite of a refused WebSocket upgrade's bare 400 into the protocol's answer, on an
/// embedded channel: no socket, no server.
@Suite("Upgrade refusals")
struct UpgradeRefusalsTests {
    /// Writes a response of `status` with no body through `channel` and reads back what left it.
    static func respond(_ channel: EmbeddedChannel, status: HTTPResponse.Status) throws -> [HTTPResponsePart] {
        try channel.writeOutbound(HTTPResponsePart.head(HTTPResponse(status: status)))
        try channel.writeOutbound(HTTPResponsePart.end(nil))
        var parts: [HTTPResponsePart] = []
        while let part = try channel.readOutbound(as: HTTPResponsePart.self) { parts.append(part) }
        return parts
    }

    @Test("a refused connection's 400 becomes the error's status with its JSON body, once; other connections' 400s pass as they are")
    func rewritesTheRecordedRefusal() throws {
        let refusals = UpgradeRefusals()
        let refused = EmbeddedChannel(handler: refusals.makeHandler())
        let other = EmbeddedChannel(handler: refusals.makeHandler())
        refusals.refuse(refused, SyncError(.tokenExpired, "the access token has expired; refresh it"))

        #expect(try Self.respond(other, status: .badRequest) == [.head(HTTPResponse(status: .badRequest)), .end(nil)])
        // A response that is not the refusal's 400 leaves the refusal recorded.
        #expect(try Self.respond(refused, status: .ok) == [.head(HTTPResponse(status: .ok)), .end(nil)])

        let parts = try Self.respond(refused, status: .badRequest)
        try #require(parts.count == 3)
        guard case .head(let head) = parts[0], case .body(let body) = parts[1] else {
            Issue.record("not a head and a body: \(parts)")
            return
        }
        #expect(head.status == .unauthorized)
        #expect(head.headerFields[.contentType] == "application/json")
        #expect(head.headerFields[.contentLength] == "\(body.readableBytes)")
        let json = try JSONParser().parse(Array(body.readableBytesView))
        #expect(json["error"]?["code"]?.stringValue == "token_expired")
        #expect(json["error"]?["message"]?.stringValue == "the access token has expired; refresh it")
        #expect(parts[2] == .end(nil))
        // Taken: the next 400 on the connection is its own.
        #expect(try Self.respond(refused, status: .badRequest) == [.head(HTTPResponse(status: .badRequest)), .end(nil)])
    }

    @Test("a connection that closes before its response leaves no refusal behind")
    func closedConnectionForgotten() throws {
        let refusals = UpgradeRefusals()
        let channel = EmbeddedChannel(handler: refusals.makeHandler())
        refusals.refuse(channel, SyncError(.unauthenticated, "the access token is not valid"))
        _ = try channel.finish()
        #expect(refusals.take(channel) == nil)
    }
}
