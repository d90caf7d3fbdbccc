import CoreMetrics
import Foundation
import HummingbirdWebSocket
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
    /// Serves the connection until either side closes it, or the server shuts down (then the
    /// upload in progress finishes, its answer is sent, and the session closes with 1001).
    ///
    /// A frame the WebSocket layer refuses (invalid UTF-8, a message over the size limit, a
    /// protocol violation) ends the session with that error thrown, so the layer closes the
    /// connection with the matching code (1007, 1009, 1002).
    func run(inbound: WebSocketInboundStream, outbound: WebSocketOutboundWriter) async throws {
        services.metrics.sessionOpened()
        defer {
            endAll()
            leaveSessionCount()
            services.metrics.sessionClosed()
        }
        if let principal, admitToSessionCount() {
            send(.ready(userId: principal.description))
            await joinedPresence()
        }
        let failure = await withDiscardingTaskGroup { group -> (any Error)? in
            group.addTask {
                // A reader that ends because the server closes the session leaves the end to
                // the main task, which sends the close frame first.
                if let error = await self.readLoop(inbound) {
                    self.eventSink.yield(.ended(error))
                } else if self.state.withLock({ $0.lifecycle.isOpen }) {
                    self.eventSink.yield(.ended(nil))
                }
            }
            // This task writes what is queued; the session ends when the client's input ends,
            // or a close frame (or a failed write) ends the output.
            var failure: (any Error)?
            events: for await event in events {
                switch event {
                case .write:
                    state.withLock { $0.lifecycle.writerLooks() }
                    guard await writeQueued(outbound) else { break events }
                case .ended(let error):
                    failure = error
                    break events
                }
            }
            group.cancelAll()
            return failure
        }
        // Nothing more is sent: the worker stops (an upload being applied is finished), and no
        // other starts.
        let worker = state.withLock { state in
            _ = state.lifecycle.closed()
            return state.worker
        }
        worker?.cancel()
        await worker?.value
        if let failure { throw failure }
    }

    /// The server is shutting down: close with 1001 now, or after the upload being applied
    /// has been answered.
    func beginShutdown() {
        let closeNow = state.withLock { $0.lifecycle.shutdownBegan() }
        if closeNow { close(.goingAway, "the server is shutting down") }
    }

    /// Reads and handles messages in order. Returns the error that ended the input, if any.
    ///
    /// Until the session is authenticated a message may hold only `unauthenticatedMessageBytes`:
    /// the frames of a longer one are refused as soon as they pass that (1009), so an
    /// unauthenticated client cannot make the server gather a 16 MiB message.
    private func readLoop(_ inbound: WebSocketInboundStream) async -> (any Error)? {
        let configuration = services.configuration
        var frames = inbound.makeAsyncIterator()
        do {
            while true {
                let authenticated = state.withLock { $0.principal != nil }
                let limit = authenticated ? configuration.maximumMessageBytes : configuration.unauthenticatedMessageBytes
                // The limit bounds the continuation frames; the first frame is bounded by the
                // frame size, and checked here.
                guard let message = try await frames.nextMessage(maxSize: limit) else { break }
                let bytes: ByteBuffer
                switch message {
                case .text(let text): bytes = ByteBuffer(string: text)
                case .binary(let buffer): bytes = buffer
                }
                if !authenticated, bytes.readableBytes > limit {
                    close(.messageTooLarge, "a message before 'auth' has at most \(limit) bytes")
                    break
                }
                await handle(bytes)
                if !state.withLock({ $0.lifecycle.isOpen }) { break }
            }
        } catch {
            logger.debug("session input refused", metadata: ["error": "\(error)"])
            _ = state.withLock { $0.lifecycle.closed() }
            return error
        }
        return nil
    }

    /// Writes the queued items, at the pace the client reads; `false` once the output is over
    /// (a close frame was sent, or a write failed).
    private func writeQueued(_ outbound: WebSocketOutboundWriter) async -> Bool {
        while let item = takeNextItem() {
            do {
                switch item {
                case .reply(let text):
                    try await writeText(ByteBuffer(string: text), to: outbound)
                case .page(let page):
                    defer { pageWritten(page) }
                    try await writeText(page.bytes, to: outbound)
                case .close(let code, let reason):
                    try? await outbound.close(code, reason: reason)
                    return false
                }
            } catch {
                return false
            }
        }
        return true
    }

    /// Writes a text message from its UTF-8 bytes as they are (the same buffer may go to many
    /// sessions), in frames of at most the configured size.
    ///
    /// Every item goes out through the one write below: the main task lives as long as the
    /// session and keeps every slab its stack ever grew to, and each call site of the
    /// WebSocket writer, inlined, adds its own copy of the writer's state to the frame.
    private func writeText(_ bytes: ByteBuffer, to outbound: WebSocketOutboundWriter) async throws {
        let limit = services.configuration.maximumFrameBytes
        var rest = bytes
        var opcode = WebSocketOpcode.text
        while true {
            let last = rest.readableBytes <= limit
            let data = last ? rest : rest.readSlice(length: limit)!
            try await outbound.write(.custom(WebSocketFrame(fin: last, opcode: opcode, data: data)))
            if last { return }
            opcode = .continuation
        }
    }

    /// Closes the session if it stayed unauthenticated, outlived its token, or went idle (the
    /// ``SessionRegistry`` asks every session twice a second). It only queues the close
    /// frame; the writer sends it and ends the session.
    func checkTimeouts(now: Duration, date: Date) {
        let (last, opened, expires, authenticated, closing) = state.withLock {
            ($0.lastActivity, $0.opened, $0.expires, $0.principal != nil, $0.lifecycle.isClosing)
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
