import CoreMetrics
import Foundation
import Locking
import NIOCore
import NIOWebSocket
import PartitionSync
import Synchronization
import SyncProtocol
import SyncStorage

extension SyncSession {
    /// Handles one message from the client, on the session's reader task. Errors answer with
    /// an `error` message; the session goes on, except for authentication failures, which
    /// close it.
    func handle(_ bytes: ByteBuffer) async {
        switch received(bytes) {
        case nil:
            return
        case .auth(let token)?:
            await authenticate(token)
        case .message(.subscribe(let partition, let cursor, let progress), let principal)?:
            // The wire's cursor read once, here: one this server did not hand out (another
            // database's, or garbage) starts a snapshot.
            let start = cursor.flatMap(CursorPosition.init)
            await subscribe(partition, from: start, progress: progress, as: principal)
        case .message(.upload(let requestId, let partition, let operations), _)?:
            await enqueueUpload(QueuedUpload(requestId: requestId, partition: partition, operations: operations))
        case .message(.ping(let nonce), _)?:
            send(.pong(nonce: nonce))
        case .message(.unsubscribe(let partition), _)?:
            unsubscribe(partition)
        case .message(.auth, _)?:
            break
        }
    }

    /// A client message decoded, with the principal it is handled for.
    enum Received {
        /// `auth`, which needs no principal yet.
        case auth(String)
        case message(ClientMessage, Principal)
    }

    /// Decodes a client message; `nil` once it has been answered here (not JSON, not a
    /// message, or not authenticated yet).
    private func received(_ bytes: ByteBuffer) -> Received? {
        let now = services.time.uptime()
        state.withLock { $0.lastActivity = now }
        let json: JSONValue
        do {
            json = try JSONParser(maximumDepth: services.store.limits.maximumDepth + 8).parse(bytes.readableBytesView)
        } catch {
            let code: SyncError.Code = error.reason == .tooDeep ? .jsonTooDeep : .badRequest
            send(.error(SyncError(code, "the message is not valid JSON: \(error)"), partition: nil))
            return nil
        }
        let message: ClientMessage
        do {
            message = try ClientMessage(json: json)
        } catch {
            if principal != nil, let (requestId, partition) = ClientMessage.uploadEnvelope(of: json) {
                // A malformed operation is final: `rejected`, with the request id.
                services.metrics.countUpload("rejected")
                services.metrics.countError(error.code.rawValue)
                send(.rejected(requestId: requestId, partition: partition, error: error, objects: []))
                return nil
            }
            let partition = json["partition"]?.stringValue.flatMap { try? Partition($0) }
            send(.error(error, partition: partition))
            return nil
        }
        if case .auth(let token) = message { return .auth(token) }
        guard let principal else {
            send(.error(SyncError(.unauthenticated, "send 'auth' with an access token first"), partition: nil))
            close(.unknown(4001), "unauthenticated")
            return nil
        }
        return .message(message, principal)
    }

    /// Authenticates with a token: the first time it makes the session ready; later it
    /// extends the session past the old token's expiry.
    func authenticate(_ token: String) async {
        do {
            let credential = try await services.auth.authenticate(bearer: token)
            let principal = credential.principal
            let now = services.time.now()
            let result = state.withLock { state -> Bool? in
                if let current = state.principal, current != principal { return nil }
                let first = state.principal == nil
                state.grant(credential, configuration: services.configuration, now: now)
                return first
            }
            switch result {
            case nil:
                send(.error(SyncError(.badRequest, "a session cannot change its user"), partition: nil))
            case true?:
                guard admitToSessionCount() else { return }
                frameGate?.open()
                send(.ready(userId: principal.description))
                await joinedPresence()
            case false?:
                break
            }
        } catch let error as SyncError {
            send(.error(error, partition: nil))
            if self.principal == nil { close(.unknown(4001), error.code.rawValue) }
        } catch {
            send(.error(ServerError.describe(error, logger: logger), partition: nil))
        }
    }

    func subscribe(_ partition: Partition, from start: CursorPosition?, progress: Bool = false, as principal: Principal) async {
        let (isNew, count, changesBefore) = state.withLock { state in
            (state.subscriptions[partition] == nil, state.subscriptions.count, state.inputChanges)
        }
        if isNew, count >= services.configuration.maximumSubscriptions {
            send(.error(SyncError(.badRequest, "a session has at most \(services.configuration.maximumSubscriptions) subscriptions"), partition: partition))
            return
        }
        // The rule's declared inputs are watched before it decides, as they are not read
        // through the context (and so carry no version read).
        let declared = services.permissions.inputs(of: principal, for: partition).map(PermissionInput.partition)
        retainInputs(declared)
        defer { releaseInputs(declared) }
        let decision: PermissionDecision
        do {
            decision = try await services.permissions.decideRead(principal, partition, context: services.permissionContext)
        } catch {
            send(.error(ServerError.describe(error, logger: logger), partition: partition))
            return
        }
        guard decision.allowed else {
            send(.error(SyncError(.permissionDenied, "you may not read \(partition)"), partition: partition))
            return
        }
        // Watched after the decision read them: a commit in between is caught by the versions
        // it read (and an absent object created meanwhile by the hub's poll).
        let inputs = decision.inputs
        retainInputs(inputs, versionsRead: decision.versionsRead)
        let replaced = state.withLock { state -> SessionSubscriptions.Subscription? in
            let (_, replaced) = state.subscriptions.subscribe(partition, from: start, inputs: inputs, progress: progress, outbox: &state.outbox)
            // A permission input that changed while the check ran is checked again.
            if state.inputChanges != changesBefore { state.recheck.formUnion(inputs) }
            return replaced
        }
        let (wasLive, oldInputs) = (replaced?.mode == .live, replaced?.inputs ?? [])
        releaseInputs(oldInputs)
        if wasLive { services.hub.leave(self, partition: partition) }
        if isNew { services.metrics.subscriptionAdded() }
        requestWork()
    }

    func unsubscribe(_ partition: Partition) {
        end(partition, code: nil)
    }

    /// Ends a subscription: at the client's request (`code` nil), or from the server's side,
    /// which tells the client with `unsubscribed`.
    func end(_ partition: Partition, code: SyncError.Code?) {
        let removed = state.withLock { $0.subscriptions.end(partition, outbox: &$0.outbox) }
        guard let removed else { return }
        services.hub.leave(self, partition: partition)
        releaseInputs(removed.inputs)
        services.metrics.subscriptionRemoved()
        if let code { send(.unsubscribed(partition: partition, code: code)) }
    }

    /// Ends every subscription: the session is closing.
    func endAll() {
        let (removed, inputs) = state.withLock { state -> ([Partition], [PermissionInput]) in
            let all = state.subscriptions.endAll()
            let inputs = Array(state.inputUses.keys)
            state.inputUses.removeAll()
            state.outbox.end()
            return (all, inputs)
        }
        for partition in removed {
            services.hub.leave(self, partition: partition)
            services.metrics.subscriptionRemoved()
        }
        services.hub.unwatch(inputs, for: self)
    }
}
