import CoreMetrics
import Foundation
import HTTPTypes
import Hummingbird
import PartitionSync
import SyncProtocol
import SyncStorage
import SyncTriggers

/// The HTTP endpoints: authentication, pull and upload for clients without a WebSocket,
/// health, readiness and metrics (docs/PROTOCOL.md, docs/openapi.yaml).
struct HTTPRoutes: Sendable {
    let store: ObjectStore
    let auth: AuthService
    let permissions: Permissions
    let uploads: UploadService
    let metrics: ServerMetrics
    let readiness: Readiness
    /// Service names whose API keys may read `/metrics`.
    let adminServices: Set<String>
    /// Whether `/metrics` answers without an admin API key.
    let metricsPublic: Bool
    /// What the trigger watchdog found, for `/health/triggers`.
    let triggerHealth: TriggerHealth
    /// Who a request's client is, behind trusted proxies too.
    let clientAddresses: ClientAddressResolver

    /// The client's address for the per-address limits: the peer, or behind a trusted proxy
    /// what its `X-Forwarded-For` says.
    func clientAddress(_ request: Request, _ context: SyncRequestContext) -> String {
        clientAddresses.address(peer: context.remoteAddress, forwardedFor: request.headers[values: .xForwardedFor])
    }

    func add(to router: Router<SyncRequestContext>) {
        router.get("health") { _, _ in Response.json(["status": "ok"]) }
        router.get("ready") { _, context in try await self.ready(context) }
        router.get("health/triggers") { _, _ in self.triggersHealth() }
        router.get("metrics") { request, _ in
            if !self.metricsPublic { try await self.requireAdmin(request) }
            return Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: .init(string: self.metrics.render())))
        }
        let authGroup = router.group("v1/auth")
        authGroup.post("register") { request, context in
            let (email, password) = try await self.credentials(request)
            let tokens = try await self.auth.register(email: email, password: password, address: self.clientAddress(request, context))
            return Response.json(tokens.json, status: .created)
        }
        authGroup.post("login") { request, context in
            let (email, password) = try await self.credentials(request)
            return Response.json(try await self.auth.login(email: email, password: password, address: self.clientAddress(request, context)).json)
        }
        authGroup.post("refresh") { request, _ in
            Response.json(try await self.auth.refresh(try await self.refreshToken(request)).json)
        }
        authGroup.delete("user") { request, _ in
            guard case .user(let userID) = try await self.authenticate(request) else {
                throw SyncError(.permissionDenied, "only a user can delete their account")
            }
            try await self.auth.deleteAccount(userID: userID)
            return Response(status: .noContent)
        }
        authGroup.get("me") { request, _ in
            Response.json(try await self.auth.account(of: try await self.signedInUser(request)).json)
        }
        authGroup.post("email/code") { request, _ in
            let sent = try await self.auth.sendVerificationCode(userID: try await self.signedInUser(request))
            return Response.json(["sent": .bool(sent), "emailVerified": .bool(!sent)], status: sent ? .accepted : .ok)
        }
        authGroup.post("email/verify") { request, _ in
            let userID = try await self.signedInUser(request)
            let body = try await request.jsonBody(limit: 4 << 10, maximumDepth: 2)
            guard let code = body["code"]?.stringValue else { throw SyncError(.badRequest, "the body needs a string 'code'") }
            return Response.json(try await self.auth.verifyEmail(userID: userID, code: code).json)
        }
        authGroup.post("password") { request, _ in
            let body = try await request.jsonBody(limit: 64 << 10, maximumDepth: 2)
            guard let token = body["token"]?.stringValue, let password = body["password"]?.stringValue else {
                throw SyncError(.badRequest, "the body needs string fields 'token' and 'password'")
            }
            return Response.json(try await self.auth.setPassword(token: token, password: password).json)
        }
        authGroup.post("logout") { request, _ in
            try await self.auth.logout(try await self.refreshToken(request))
            return Response(status: .noContent)
        }
        let partitions = router.group("v1/partitions")
        partitions.get(":partition/changes") { request, context in try await self.pull(request, context) }
        partitions.post(":partition/uploads") { request, context in try await self.upload(request, context) }
    }

    private func ready(_ context: SyncRequestContext) async throws -> Response {
        guard readiness.isReady else {
            if readiness.isStopping { return .error(SyncError(.unavailable, "the server is stopping")) }
            return .error(SyncError(.unavailable, "the server is starting or has lost its database"))
        }
        do {
            // Bounded: while the database is gone a query may wait for a connection that never comes.
            let store = self.store
            _ = try await withDeadline(.seconds(2), "the readiness check") { try await store.headVersion(of: Partition("health=check")) }
            return .json(["status": "ready"])
        } catch {
            return .error(SyncError(.unavailable, "the database is unreachable"))
        }
    }

    /// 200 when every trigger runs and keeps up, else 503; each trigger's lag, lease holder
    /// and problems (`stuck`, `no_lease`, `behind`, `unknown`) either way.
    private func triggersHealth() -> Response {
        let reports = triggerHealth.reports
        let healthy = reports.allSatisfy(\.problems.isEmpty)
        let body: JSONValue = [
            "status": .string(healthy ? "ok" : "unhealthy"),
            "triggers": .array(reports.map { report in
                [
                    "name": .string(report.name), "lag": .int(report.lag),
                    "leaseHolder": report.leaseHolder.map(JSONValue.string) ?? .null,
                    "problems": .array(report.problems.map { .string($0.rawValue) }),
                ]
            }),
        ]
        return .json(body, status: healthy ? .ok : .serviceUnavailable)
    }

    // MARK: Sync over HTTP

    private func pull(_ request: Request, _ context: SyncRequestContext) async throws -> Response {
        let principal = try await authenticate(request)
        let partition = try context.partitionParameter()
        let permissionContext = PermissionContext(source: StoreObjectSource(store: store), logger: context.logger)
        guard try await permissions.canRead(principal, partition, context: permissionContext) else {
            throw SyncError(.permissionDenied, "you may not read \(partition)")
        }
        let cursor = request.uri.queryParameters["cursor"].map { Cursor(rawValue: String($0)) }
        var limit: Int?
        if let text = request.uri.queryParameters["limit"] {
            guard let value = Int(String(text)), value > 0 else { throw SyncError(.badRequest, "limit is a positive integer") }
            limit = value
        }
        // From a replica that has replayed every commit the client may have seen, if one is in use.
        let batch = try await store.changes(
            in: partition, after: cursor.flatMap { $0.rawValue.isEmpty ? nil : $0 }, limit: limit, target: try await store.readTarget())
        metrics.pushed(batch.objects.count)
        return .json(batch.json)
    }

    private func upload(_ request: Request, _ context: SyncRequestContext) async throws -> Response {
        let principal = try await authenticate(request)
        let partition = try context.partitionParameter()
        let body = try await request.jsonBody(limit: context.maxUploadSize, maximumDepth: store.limits.maximumDepth + 8)
        guard let requestId = body["requestId"]?.stringValue else { throw SyncError(.badRequest, "the body needs a string 'requestId'") }
        guard let list = body["operations"]?.arrayValue else { throw SyncError(.badRequest, "the body needs an array 'operations'") }
        var operations: [SyncOperation] = []
        do {
            for item in list { operations.append(try SyncOperation(json: item)) }
        } catch {
            // A malformed operation is final: the `rejected` answer, with the request id.
            let message = ServerMessage.rejected(requestId: requestId, partition: partition, error: error, objects: [])
            return .json(message.json, status: error.code.httpStatus)
        }
        // A batch of one, through the path WebSocket uploads take.
        switch await uploads.upload(batch: [(requestId, operations)], to: partition, by: principal)[0] {
        case .ack(let result):
            return .json(ServerMessage.ack(requestId: requestId, partition: partition, cursor: result.cursor, version: result.version).json)
        case .rejected(let error, let objects):
            let message = ServerMessage.rejected(requestId: requestId, partition: partition, error: error, objects: objects)
            return .json(message.json, status: error.code.httpStatus)
        case .failed(let error):
            throw error
        }
    }

    // MARK: Helpers

    private func requireAdmin(_ request: Request) async throws {
        try await AdminAccess(auth: auth, services: adminServices).require(request)
    }

    private func authenticate(_ request: Request) async throws -> Principal {
        try await auth.principal(of: request)
    }

    /// The user a request is signed in as; `permission_denied` for a service.
    private func signedInUser(_ request: Request) async throws -> String {
        guard case .user(let userID) = try await authenticate(request) else {
            throw SyncError(.permissionDenied, "only a user has an account")
        }
        return userID
    }


    private func credentials(_ request: Request) async throws -> (String, String) {
        let body = try await request.jsonBody(limit: 64 << 10, maximumDepth: 4)
        guard let email = body["email"]?.stringValue, let password = body["password"]?.stringValue else {
            throw SyncError(.badRequest, "the body needs string fields 'email' and 'password'")
        }
        return (email, password)
    }

    private func refreshToken(_ request: Request) async throws -> String {
        let body = try await request.jsonBody(limit: 64 << 10, maximumDepth: 4)
        guard let token = body["refreshToken"]?.stringValue else { throw SyncError(.badRequest, "the body needs a string 'refreshToken'") }
        return token
    }
}

extension HTTPField.Name {
    /// The addresses a request passed through, client first, as proxies append them (read only
    /// from a trusted proxy: ``ClientAddressResolver``).
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}
