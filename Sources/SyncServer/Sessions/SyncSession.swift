import CoreMetrics
import DequeModule
import Foundation
import Locking
import Logging
import Synchronization
import NIOCore
import NIOWebSocket
import PartitionSync
import SyncProtocol
import SyncStorage

/// One WebSocket connection: its principal, its subscriptions, and a bounded queue of
/// outgoing messages.
///
/// An idle session holds no task. Its connection (``SessionChannelHandler``, on the
/// connection's event loop) reads frames into messages and writes what is queued as the
/// socket takes it, at the pace the client reads. Tasks run only while there is work (see
/// `SyncSession+Run.swift`): the reader handles the client's messages in order, queueing
/// uploads, while messages wait; the worker applies queued uploads, the consecutive ones to
/// one partition in one transaction (see `SyncSession+Uploads.swift`), reads snapshot and
/// catch-up pages, and checks permissions again. Each is started by whoever brings it work
/// and lets go of its task as it ends (a task keeps the stack it grew to as long as it
/// lives). A client that stops reading holds up only its own socket, not its uploads, nor the
/// end of a subscription it may no longer read. The ``SessionRegistry`` closes idle and
/// expired sessions for all of them.
///
/// Its subscriptions catch up or follow their feed live (``SessionSubscriptions``): when the
/// queue holds more change bytes than the limit, a live subscription that would overflow it
/// drops its queued pages and goes back to catching up from the last cursor the client was
/// actually sent, once the queue has drained: memory stays bounded and the client sees no gap.
final class SyncSession: FeedSubscriber, Sendable {
    /// An upload waiting for the uploader.
    struct QueuedUpload {
        var requestId: String
        var partition: Partition
        var operations: [SyncOperation]
    }

    struct State {
        /// When the session began (``SyncClock/uptime``): an unauthenticated one must
        /// authenticate within the auth timeout.
        let opened: Duration
        /// The last message from the client (``SyncClock/uptime``).
        var lastActivity: Duration
        var principal: Principal?
        var expires: Date?
        /// The revocations that end this session's credential.
        var revokedBy: [Revocation] = []
        var subscriptions = SessionSubscriptions()
        /// What is to be sent, and the pages each subscription has queued or in the writer.
        var outbox: SessionOutbox
        /// Closing, shutting down, uploading, the worker and the writer's wake-up.
        var lifecycle = SessionLifecycle()
        /// Permission inputs that changed: the decisions depending on them are checked again.
        var recheck: Set<PermissionInput> = []
        /// Counts permission-input changes, to notice one that lands during a check.
        var inputChanges = 0
        /// The write decision of each partition uploaded to, and what it was decided on, until
        /// one of its inputs changes.
        var writeDecisions: [Partition: PermissionDecision] = [:]
        /// Uploads received and not yet applied, in order.
        var uploads: Deque<QueuedUpload> = []
        /// The reader, waiting for room in a full upload queue: resumed when the worker takes
        /// uploads from it or the session closes.
        var uploadRoom: CheckedContinuation<Void, Never>?
        /// How many subscriptions and write decisions depend on each permission input.
        var inputUses: [PermissionInput: Int] = [:]
        /// The user whose presence this session counts in.
        var presentUser: String?
        /// The user whose session bound this session counts against.
        var countedUser: String?
        /// The running worker, until it ends: the session waits for it before it ends.
        var worker: Task<Void, Never>?
        /// The connection, from its upgrade until it closes.
        var connection: SessionConnection?
        /// Messages received and not yet handled, the running reader, and whether the
        /// connection reads on.
        var inbox = SessionInbox<Task<Void, Never>>()
        /// When the connection wrote its close frame (``SyncClock/uptime``).
        var closeSent: Duration?
    }

    /// What the reader handles.
    enum Inbound {
        /// Count in the user's presence (a session authenticated by its upgrade request).
        case joinPresence
        case message(ByteBuffer)
    }

    let services: SessionServices
    let id: Int
    var logger: Logger { services.logger }
    let state: Locked<State>

    /// Opened once the session is authenticated by `auth`: until then the connection takes
    /// only small frames.
    let frameGate: FrameGate?
    /// Whether the session counts in its user's presence: a client connected for one command
    /// (`?presence=off` on the WebSocket URL) does not make its user present.
    let countsInPresence: Bool

    init(services: SessionServices, id: Int, credential: Credential?, frameGate: FrameGate? = nil, countsInPresence: Bool = true) {
        self.services = services
        self.id = id
        self.frameGate = frameGate
        self.countsInPresence = countsInPresence
        let opened = services.time.uptime()
        let outbox = SessionOutbox(
            byteLimit: services.configuration.outboxLimitBytes, replyLimit: services.configuration.outboxLimitReplies)
        var state = State(opened: opened, lastActivity: opened, outbox: outbox)
        if let credential { state.grant(credential, configuration: services.configuration, now: services.time.now()) }
        self.state = Locked(state)
        Self.live.add(1, ordering: .relaxed)
    }

    var principal: Principal? { state.withLock { $0.principal } }

    /// Whether the session holds a task (its worker or its reader runs).
    var holdsTask: Bool { state.withLock { $0.worker != nil || $0.inbox.readerRuns } }

    private static let live = Atomic<Int>(0)
    /// Sessions not yet freed, for the test that checks a closed one is.
    static var liveCount: Int { live.load(ordering: .relaxed) }

    deinit { Self.live.subtract(1, ordering: .relaxed) }

    /// Tells the connection that items wait in the queue (once until it looks).
    func signalWriter() {
        state.withLock { $0.lifecycle.itemsQueued() ? $0.connection : nil }?.wakeWriter()
    }

    /// Asks for the worker: starts one, or tells the running one to look again; none once the
    /// session is closing.
    ///
    /// The task is created and kept under the lock, and let go of under the lock in which it
    /// passes for the last time (`work()`): the handle is kept only while the worker runs. A
    /// finished task's handle keeps the task, and the runtime frees a task's stack (every slab
    /// it grew to reading pages, ~13 kB) only when the task itself goes, so an idle session
    /// that kept its last worker's handle kept that stack too.
    func requestWork() {
        state.withLock { state in
            guard state.lifecycle.workRequested() else { return }
            state.worker = Task { await self.work() }
        }
    }

    /// Counts this session in its user's presence (once), unless it does not count.
    func joinedPresence() async {
        guard countsInPresence else { return }
        let user = state.withLock { state -> String? in
            guard state.presentUser == nil, let user = state.principal?.userID else { return nil }
            state.presentUser = user
            return user
        }
        if let user { await services.presence?.opened(user) }
    }

    /// Removes this session from its user's presence.
    func leftPresence() async {
        let user = state.withLock { state -> String? in
            defer { state.presentUser = nil }
            return state.presentUser
        }
        if let user { await services.presence?.closed(user) }
    }

    // MARK: The queue

    /// Queues a reply; a client that lets too many replies pile up is closed. (An upload
    /// batch's answers go in as one event: ``applyQueuedUploads()``.)
    func send(_ message: ServerMessage) {
        if case .error(let error, _) = message { services.metrics.countError(error.code.rawValue) }
        let text = message.json.jsonString
        let outcome = state.withLock { state -> SessionOutbox.ReplyOutcome in
            guard !state.lifecycle.isClosing else { return .closed }
            return state.outbox.queueReply(text)
        }
        switch outcome {
        case .queued: signalWriter()
        case .overflow: close(.unknown(4002), "the client does not read its messages")
        case .closed: break
        }
    }

    /// Queues a close frame after what is queued; nothing is queued after it.
    func close(_ code: WebSocketErrorCode, _ reason: String) {
        let (queued, reader) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard state.lifecycle.closed() else { return (false, nil) }
            _ = state.outbox.queueClose(code, reason)
            defer { state.uploadRoom = nil }
            return (true, state.uploadRoom)
        }
        reader?.resume()
        if queued { signalWriter() }
    }

    /// The next item for the writer; `nil` also while the next is a page of the partition an
    /// upload is being applied to (the uploader wakes the writer when done).
    func takeNextItem() -> SessionOutbox.Item? {
        state.withLock { $0.outbox.next() }
    }

    /// Records that a page was written to the socket (or that its write failed: the session
    /// then ends). Wakes the worker when a catch-up can read on: this one's, or another's now
    /// that the queue is under half its limit (a session following everything live starts no
    /// worker per page).
    func pageWritten(_ page: SessionOutbox.Page) {
        if state.withLock({ $0.subscriptions.written(page, outbox: &$0.outbox) }) { requestWork() }
    }

    // MARK: Permission inputs

    /// Counts uses of permission inputs, watching those newly used. An input read at an
    /// older version than the hub has seen since (`versionsRead`) is checked again at once.
    func retainInputs(_ inputs: some Collection<PermissionInput>, versionsRead: [Partition: Int64] = [:]) {
        let new = state.withLock { state in
            inputs.filter { input in
                state.inputUses[input, default: 0] += 1
                return state.inputUses[input] == 1
            }
        }
        let missed = services.hub.watch(new, versionsRead: versionsRead, for: self)
        for input in missed { permissionInputChanged(input, changes: nil) }
    }

    /// Releases uses of permission inputs, unwatching those no longer used.
    func releaseInputs(_ inputs: some Collection<PermissionInput>) {
        let unused = state.withLock { state in
            inputs.filter { input in
                state.inputUses[input, default: 0] -= 1
                guard state.inputUses[input, default: 0] <= 0 else { return false }
                state.inputUses.removeValue(forKey: input)
                return true
            }
        }
        if !unused.isEmpty { services.hub.unwatch(unused, for: self) }
    }

    // MARK: FeedSubscriber (called by the hub, never under its lock)

    func deliver(partition: Partition, generation: Int, end: CursorPosition, bytes: ByteBuffer, objectCount: Int) -> Bool {
        let page = SessionOutbox.Page(partition: partition, generation: generation, end: end, bytes: bytes)
        let outcome = state.withLock { state -> SessionSubscriptions.LiveOutcome in
            guard !state.lifecycle.isClosing else { return .refused }
            let outcome = state.subscriptions.live(page, outbox: &state.outbox)
            if outcome == .queued { services.metrics.observeQueue(bytes: state.outbox.pageBytes) }
            return outcome
        }
        switch outcome {
        case .queued:
            signalWriter()
            return true
        case .refused:
            return false
        case .overflowed:
            services.metrics.subscriptionPauses.increment()
            logger.debug("session queue full; subscription paused", metadata: ["partition": "\(partition)"])
            requestWork()
            return false
        }
    }

    /// Makes a subscription that caught up live, before it joins its feed; `false` when it
    /// ended, was replaced or is reading meanwhile.
    func becomeLive(partition: Partition, generation: Int) -> Bool {
        state.withLock { $0.subscriptions.becomeLive(partition, generation: generation) }
    }

    /// The feed was ahead of a subscription that asked to join: it catches up again.
    func fellBehind(partition: Partition, generation: Int) {
        _ = state.withLock { $0.subscriptions.catchUpAgain(partition, generation: generation) }
    }

    func resync(partition: Partition, generation: Int) {
        if state.withLock({ $0.subscriptions.catchUpAgain(partition, generation: generation) }) { requestWork() }
    }

    func permissionDecisions(dependingOn input: PermissionInput, canChangeWith changes: [ObjectChange]) -> Bool {
        guard let principal else { return true }
        let dependents = state.withLock { state in
            state.subscriptions.reading(dependingOn: input)
                + state.writeDecisions.filter { $0.value.inputs.contains(input) }.map(\.key)
        }
        let permissions = services.permissions
        return dependents.contains { permissions.decisions(of: principal, on: $0, canChangeWith: changes) }
    }

    func permissionInputChanged(_ input: PermissionInput, changes: [ObjectChange]?) {
        // Known changes: only a decision they can change is checked again.
        if let changes, !permissionDecisions(dependingOn: input, canChangeWith: changes) { return }
        let released = state.withLock { state in
            state.recheck.insert(input)
            state.inputChanges += 1
            defer { state.writeDecisions.removeAll() }
            return state.writeDecisions.values.flatMap(\.inputs)
        }
        releaseInputs(released)
        requestWork()
    }
}
