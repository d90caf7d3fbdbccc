import Foundation
import HTTPTypes
import Synchronization
import NIOCore
import NIOHTTP1
import NIOHTTPTypesHTTP1
import PartitionSync
import SyncProtocol

/// The WebSocket upgrade of `GET /v1/sync`: whether a request may open a session, and the
/// session it opens.
///
/// Refused, with the error the client is answered with (its status and body): a server that
/// is stopping (`unavailable`: connect again, through a balancer to another instance), a bad
/// `presence` parameter, a credential in the header that is not valid or whose user has all
/// its sessions open (401, 429), and any other path. Without a credential the client sends
/// `auth`, and until then only small frames are let through (``FrameGate``).
final class SessionUpgrade: Sendable {
    /// An upgrade let through, with what the session starts from.
    struct Grant: Sendable {
        var credential: Credential?
        var presence: SessionPresence
        var frameGate: FrameGate?
    }

    enum Decision: Sendable {
        case accept(Grant)
        case refuse(SyncError)
    }

    static let path = "/v1/sync"

    let services: SessionServices
    let sessions: SessionRegistry
    let readiness: Readiness
    private let nextID = Atomic<Int>(0)

    init(services: SessionServices, sessions: SessionRegistry, readiness: Readiness) {
        self.services = services
        self.sessions = sessions
        self.readiness = readiness
    }

    var maximumMessageBytes: Int { services.configuration.maximumMessageBytes }

    /// Whether the request (its head as NIO read it) may open a session.
    func decide(_ head: HTTPRequestHead, channel: any Channel) async -> Decision {
        let request: HTTPRequest
        do {
            request = try HTTPRequest(head, secure: false, splitCookie: false)
        } catch {
            return .refuse(SyncError(.badRequest, "the upgrade request is not valid HTTP"))
        }
        let components = URLComponents(string: request.path ?? "")
        guard components?.path == Self.path else {
            return .refuse(SyncError(.notFound, "no WebSocket here; sessions are opened at \(Self.path)"))
        }
        if readiness.isStopping { return .refuse(SyncError(.unavailable, "the server is stopping; connect again")) }
        let presence: SessionPresence
        do {
            presence = try SessionPresence(query: components?.queryItems?.first { $0.name == "presence" }?.value)
        } catch {
            return .refuse(error)
        }
        // A credential in the header must be valid; without one, the client sends `auth`.
        guard let bearer = request.headerFields.bearerCredential else {
            do {
                let gate = try await FrameGate.install(on: channel, limit: services.configuration.unauthenticatedMessageBytes)
                return .accept(Grant(credential: nil, presence: presence, frameGate: gate))
            } catch {
                return .refuse(SyncError(.unavailable, "the connection closed during its upgrade"))
            }
        }
        do {
            let credential = try await services.auth.authenticate(bearer: bearer)
            if let user = credential.principal.userID, services.userSessions.isFull(user) {
                return .refuse(SyncError(.tooManySessions, "you have \(services.userSessions.limit) sessions open; close one first"))
            }
            return .accept(Grant(credential: credential, presence: presence, frameGate: nil))
        } catch let error as SyncError {
            return .refuse(error)
        } catch {
            return .refuse(ServerError.describe(error, logger: services.logger))
        }
    }

    /// Opens the session of an upgraded connection: its handler goes at the end of the
    /// connection's pipeline (on its event loop), and the session joins the registry (one
    /// that upgraded as the shutdown began closes as the others do).
    func start(_ grant: Grant, on channel: any Channel) throws {
        let id = nextID.add(1, ordering: .relaxed).newValue
        var sessionServices = services
        sessionServices.logger[metadataKey: "session"] = "\(id)"
        let session = SyncSession(
            services: sessionServices, id: id, credential: grant.credential, frameGate: grant.frameGate,
            countsInPresence: grant.presence == .counted)
        let added = sessions.add(session)
        try channel.pipeline.syncOperations.addHandler(
            SessionChannelHandler(session: session, maximumFrameBytes: services.configuration.maximumFrameBytes))
        if !added { session.beginShutdown() }
    }
}
