import CoreMetrics
import DequeModule
import Foundation
import Locking
import Logging
import NIOCore
import NIOWebSocket
import PartitionSync
import ServiceLifecycle
import Synchronization
import SyncProtocol
import SyncStorage

extension SyncSession {
    /// What the connection does after handing over a message.
    enum Reading: Equatable {
        case goOn
        /// Messages wait to be handled: read no more until the session says
        /// (``SessionConnection/resumeReading()``).
        case pause
    }

    /// The connection is ready (its ``SessionChannelHandler`` added after the upgrade): a
    /// session authenticated by the upgrade request says `ready` and counts in its user's
    /// presence.
    func connected(_ connection: SessionConnection) {
        services.metrics.sessionOpened()
        let principal = state.withLock { state in
            state.connection = connection
            return state.principal
        }
        if let principal, admitToSessionCount() {
            send(.ready(userId: principal.description))
            // One message queued to an empty inbox: it pauses nothing.
            _ = state.withLock { queue(.joinPresence, in: &$0) }
        }
    }

    /// The most bytes the next message may have: small until `auth` succeeded. `isFinal`: it
    /// changes no more (the session is authenticated, and a principal is never taken back).
    var messageLimit: (bytes: Int, isFinal: Bool) {
        let authenticated = state.withLock { $0.principal != nil }
        let configuration = services.configuration
        return authenticated ? (configuration.maximumMessageBytes, true) : (configuration.unauthenticatedMessageBytes, false)
    }

    /// A message from the client, handled in order by the session's reader task (started when
    /// a message arrives and none runs, ended when none waits).
    func arrived(_ bytes: ByteBuffer) -> Reading {
        let pause = state.withLock { queue(.message(bytes), in: &$0) }
        return pause ? .pause : .goOn
    }

    /// Queues a message for the reader (none once the session is not open), starting the
    /// reader if none runs; `true`: the connection pauses.
    ///
    /// The task is created and kept under the lock, as the worker's is (``requestWork()``): the
    /// reader lets go of its handle under the lock in which it ends, so a handle kept after the
    /// lock could outlive its task.
    private func queue(_ message: Inbound, in state: inout State) -> Bool {
        state.inbox.arrived(message, sessionOpen: state.lifecycle.isOpen) {
            Task { await self.readMessages() }
        }.pause
    }

    /// The reader: handles the waiting messages in order, then ends. Its handle is let go of
    /// in the step that ends it, so an idle session holds no task (a finished task's handle
    /// keeps its stack).
    private func readMessages() async {
        while true {
            let (next, resume) = state.withLock { state -> (Inbound?, SessionConnection?) in
                let next = state.inbox.takeNext(sessionOpen: state.lifecycle.isOpen)
                return (next.message, next.resumeReading ? state.connection : nil)
            }
            resume?.resumeReading()
            switch next {
            case nil: return
            case .joinPresence: await joinedPresence()
            case .message(let bytes): await handle(bytes)
            }
        }
    }

    /// The client's input is over: it closed, sent what the server refuses, or its connection
    /// failed. Nothing more is read or queued.
    func inputEnded() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            _ = state.lifecycle.closed()
            state.outbox.end()
            state.inbox.dropWaiting()
            defer { state.uploadRoom = nil }
            return state.uploadRoom
        }
        waiter?.resume()
    }

    /// The connection wrote its close frame (``checkTimeouts(now:date:)`` closes it if the
    /// client does not answer in time).
    func closeSent() {
        let now = services.time.uptime()
        state.withLock { $0.closeSent = now }
    }

    /// The connection closed: the session ends. What is being applied finishes (an upload's
    /// transaction, a page read), then the session leaves its feeds, its user's session count
    /// and presence, and the registry.
    func disconnected() {
        let (worker, reader, waiter) = state.withLock { state in
            _ = state.lifecycle.closed()
            state.connection = nil
            state.inbox.dropWaiting()
            defer { state.uploadRoom = nil }
            return (state.worker, state.inbox.reader, state.uploadRoom)
        }
        waiter?.resume()
        Task {
            worker?.cancel()
            await worker?.value
            await reader?.value
            endAll()
            leaveSessionCount()
            services.metrics.sessionClosed()
            await leftPresence()
            services.sessions?.remove(self)
        }
    }

    /// The server is shutting down: close with 1001 now, or after the upload being applied
    /// has been answered.
    func beginShutdown() {
        let closeNow = state.withLock { $0.lifecycle.shutdownBegan() }
        if closeNow { close(.goingAway, "the server is shutting down") }
    }

    /// The connection looks at the queue: items queued from now on wake it again.
    func writerLooks() {
        state.withLock { $0.lifecycle.writerLooks() }
    }

    /// Closes the session if it stayed unauthenticated, outlived its token, or went idle (the
    /// ``SessionRegistry`` asks every session twice a second). It only queues the close
    /// frame; the connection sends it, and is closed here if the client has not answered it
    /// within the close timeout.
    func checkTimeouts(now: Duration, date: Date) {
        let (last, opened, expires, authenticated, closing, closeSent, connection) = state.withLock {
            ($0.lastActivity, $0.opened, $0.expires, $0.principal != nil, $0.lifecycle.isClosing, $0.closeSent, $0.connection)
        }
        if let closeSent, now - closeSent > services.configuration.closeTimeout {
            // The client did not answer the close frame: the connection closes without it.
            connection?.close()
            return
        }
        guard !closing else { return }
        if !authenticated, now - opened > services.configuration.authTimeout {
            send(.error(SyncError(.unauthenticated, "no 'auth' message arrived in time"), partition: nil))
            close(.unknown(4001), "unauthenticated")
        } else if let expires, expires < date {
            var message = "the access token expired; reconnect with a fresh one, or send 'auth' before it expires"
            if case .service? = principal {
                message = "the API-key session reached its maximum lifetime; reconnect, or send 'auth' with the key before it ends"
            }
            send(.error(SyncError(.tokenExpired, message), partition: nil))
            close(.unknown(4001), "token_expired")
        } else if now - last > services.configuration.idleTimeout {
            close(.unknown(4000), "idle timeout")
        }
    }

    // MARK: The worker: catch-up reads and permission re-checks

    /// The worker: applies queued uploads, checks permissions again, reads pages for
    /// subscriptions catching up, until none of it has anything to do; then it ends (a later
    /// request starts another).
    func work() async {
        while !Task.isCancelled {
            state.withLock { $0.lifecycle.workerLooks() }
            if await applyQueuedUploads() == .closed { return }
            await recheckPermissions()
            await catchUp()
            let ends = state.withLock { state in
                guard state.lifecycle.workerPassed(uploadsWaiting: !state.uploads.isEmpty) else { return false }
                state.worker = nil
                return true
            }
            if ends { return }
        }
        state.withLock { state in
            state.lifecycle.workerCancelled()
            state.worker = nil
        }
    }

    /// Reads pages for catching-up subscriptions while the queue has room: the next page of a
    /// subscription is read while its previous one is written (at most two in the queue);
    /// joins a subscription to its live feed once a page reaches the head.
    private func catchUp() async {
        while !Task.isCancelled {
            guard let read = state.withLock({ state in state.lifecycle.isClosing ? nil : state.subscriptions.nextCatchUp(outbox: state.outbox) })
            else { return }
            let partition = read.partition
            var page: EncodedChangeBatch
            let reached: CursorPosition
            var target = read.target
            do {
                // A catch-up's pages may come from a replica that has replayed the primary's WAL
                // as far as it was when the catch-up started: every commit the client has seen.
                if target == nil { target = try await services.store.readTarget() }
                let found = try await services.store.encodedPage(
                    in: partition, from: read.start, limit: services.configuration.batchSize, target: target)
                (page, reached) = (found.batch, found.end)
                // Progress, when asked for: the first page of a catch-up that more pages follow
                // counts the rest.
                if read.countsTotal, !page.upToDate {
                    page.total = page.objectCount + (try await services.store.remainingObjects(in: partition, after: reached))
                }
            } catch {
                state.withLock { $0.subscriptions.catchUpFailed(read) }
                let failure = ServerError.describe(error, logger: logger)
                if failure.code == .unavailable {
                    // Try again shortly; the subscription stays.
                    try? await services.time.sleep(for: .milliseconds(500))
                    requestWork()
                    return
                }
                end(partition, code: failure.code)
                return
            }
            let queued = SessionOutbox.Page(partition: partition, generation: read.generation, end: reached, bytes: page.messageBuffer())
            let isQueued = state.withLock { state -> Bool in
                guard !state.lifecycle.isClosing else { return false }
                guard state.subscriptions.catchUpRead(read, page: queued, target: target, outbox: &state.outbox) else { return false }
                services.metrics.observeQueue(bytes: state.outbox.pageBytes)
                return true
            }
            guard isQueued else { continue }
            signalWriter()
            services.metrics.pushed(page.objectCount)
            // Up to date: live from here, if the feed is not ahead of it (then it reads on).
            if page.upToDate, becomeLive(partition: partition, generation: read.generation) {
                let result = services.hub.join(self, partition: partition, generation: read.generation, from: reached)
                if case .behind = result { fellBehind(partition: partition, generation: read.generation) }
            }
        }
    }

    /// Checks again the subscriptions whose permission inputs changed; those that may no
    /// longer read end with `permission_revoked`.
    private func recheckPermissions() async {
        let (changed, subscriptions, principal) = state.withLock { state in
            let changed = state.recheck
            state.recheck.removeAll()
            return (changed, state.subscriptions.all.map { ($0.key, $0.value.inputs) }, state.principal)
        }
        guard !changed.isEmpty, let principal else { return }
        for (partition, inputs) in subscriptions where !changed.isDisjoint(with: inputs) {
            do {
                let declared = services.permissions.inputs(of: principal, for: partition).map(PermissionInput.partition)
                retainInputs(declared)
                defer { releaseInputs(declared) }
                let decision = try await services.permissions.decideRead(principal, partition, context: services.permissionContext)
                if !decision.allowed {
                    logger.info("read permission revoked", metadata: ["partition": "\(partition)"])
                    end(partition, code: .permissionRevoked)
                    continue
                }
                // Still readable: what it depends on now (a rule reads what it found this time).
                retainInputs(decision.inputs, versionsRead: decision.versionsRead)
                let replaced = state.withLock { $0.subscriptions.replaceInputs(of: partition, with: decision.inputs) }
                releaseInputs(replaced ?? decision.inputs)
            } catch {
                logger.warning("permission re-check failed", metadata: ["partition": "\(partition)", "error": "\(error)"])
                state.withLock { $0.recheck.formUnion(inputs) }
            }
        }
    }
}

extension AsyncStream where Element == Void {
    /// A stream that never yields and ends only when its task is cancelled.
    static func never() -> AsyncStream<Void> {
        AsyncStream { _ in }
    }
}
