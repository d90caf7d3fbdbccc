import Foundation
import Logging
import SyncProtocol

/// The client of a PartitionSync server: one WebSocket, partitions as live collections, an
/// offline store in SQLite and a queue of writes.
///
/// ```swift
/// let client = try SyncClient(configuration: .init(serverURL: URL(string: "http://127.0.0.1:8080")!, storePath: "app.sqlite"))
/// try await client.login(email: "ann@example.com", password: "correct horse")
/// let connection = Task { await client.run() }          // reconnects until cancelled
/// let mine = try await client.open(try Partition("user=\(await client.userID!)"))
/// try await mine.write([.set(userKey, path: try Path(parsing: "presence"), value: "Hidden")])
/// ```
///
/// Writes apply locally at once and are uploaded in order, each with a stable request id, so a
/// resend after a lost answer is harmless. A refused write is reverted to the server's state
/// and reported as ``ClientEvent/rejected(requestId:partition:error:)``. A reset of a partition
/// replaces its copy and replays the writes still pending on top.
public actor SyncClient {
    public let configuration: SyncClientConfiguration
    let store: LocalStore
    var logger: Logger { configuration.logger }

    var status: ConnectionStatus = .offline
    var outgoing: AsyncStream<ClientMessage>.Continuation?
    var upToDate: Set<Partition> = []
    /// The partitions the current connection has subscribed to: opening one again does not
    /// subscribe again (the server would start its catch-up over).
    var subscribed: Set<Partition> = []
    /// The snapshots and catch-ups under way whose first page said how large they are.
    var progress: [Partition: SyncProgress] = [:]
    var observers: [Partition: [UUID: AsyncStream<PartitionSnapshot>.Continuation]] = [:]
    var eventObservers: [UUID: AsyncStream<ClientEvent>.Continuation] = [:]
    /// The last writes the server refused, oldest first (``refusedWrites``).
    var refusals: [RefusedWrite] = []
    var answerWaiter: (requestId: String, continuation: CheckedContinuation<UploadAnswer, Never>)?
    var uploadWakeup: CheckedContinuation<Void, Never>?
    var signedInWakeup: CheckedContinuation<Void, Never>?
    /// Whether the current connection got `ready`.
    var sessionAccepted = false
    /// The upload the current connection sends before it subscribes (see ``handle(_:)``, `ready`).
    var subscriptionsWaitFor: String?
    /// When the current connection last received a message, for the liveness check.
    var lastHeard = ContinuousClock.now
    /// Every change batch received, for the tests.
    var received: [BatchRecord] = []
    /// The tasks waiting for the client's state to change (``wait(timeout:until:)``).
    var changeWaiters: [UUID: CheckedContinuation<Void, Never>] = [:]
    /// Wakes at the next local expiry (``expireLocally(_:in:at:)``).
    var localExpiryTimer: Task<Void, Never>?

    /// What arrived in a change batch.
    package struct BatchRecord: Sendable, Hashable {
        package var partition: Partition
        package var reset: Bool
        package var upToDate: Bool
        package var keys: [ObjectKey]
    }

    /// The change batches received since the client was created, oldest first (for the tests).
    package func receivedBatches() -> [BatchRecord] { received }

    enum UploadAnswer {
        case acknowledged
        case rejected
        case failed
        case disconnected
    }

    public init(configuration: SyncClientConfiguration) throws {
        self.configuration = configuration
        self.store = try LocalStore(path: configuration.storePath)
    }

    // MARK: Partitions

    /// Opens a partition: it is kept in the store and followed live while connected.
    public func open(_ partition: Partition) throws -> PartitionHandle {
        let cursor = try store.setOpen(partition, true)
        if status == .online, subscriptionsWaitFor == nil, !subscribed.contains(partition) {
            subscribed.insert(partition)
            outgoing?.yield(.subscribe(partition: partition, cursor: cursor, progress: true))
        }
        return PartitionHandle(client: self, partition: partition)
    }

    /// Stops following a partition (its objects stay in the store until it is opened again
    /// and updated from its cursor).
    public func close(_ partition: Partition) throws {
        try store.setOpen(partition, false)
        subscribed.remove(partition)
        upToDate.remove(partition)
        progress[partition] = nil
        outgoing?.yield(.unsubscribe(partition: partition))
    }

    /// The objects of a partition as the app should show them: the server's, with the pending
    /// writes replayed on top, and this app's drafts (``saveDraft(_:in:id:)``) over those.
    public func objects(in partition: Partition) throws -> [SyncObject] {
        try purgeExpiredNow()
        return try view(of: partition, drafts: true).sorted { $0.key < $1.key }
    }

    /// Purges the objects whose local expiry has passed, if any has, before a read of the view.
    func purgeExpiredNow() throws {
        if let next = try store.nextLocalExpiry(), next <= Date() { purgeLocalExpiries() }
    }

    /// The server's objects with the pending writes on top, and the drafts with `drafts`; only
    /// those among `keys` when given (then only they, and what the writes touch, are read).
    func view(of partition: Partition, drafts: Bool = false, keys: Set<ObjectKey>? = nil) throws -> [SyncObject] {
        var writes = try store.pending(in: partition).map(\.operations)
        if drafts { writes += try store.drafts(in: partition).map(\.operations) }
        let server = try keys.map { try store.serverObjects(of: partition, keys: $0.union(writes.joined().map(\.key))) }
            ?? store.serverObjects(of: partition)
        var states = server.mapValues(\.state)
        let applier = OperationApplier(partition: partition)
        for operations in writes {
            // A write the server will refuse is not shown; its rejection arrives later (a
            // draft that no longer applies shows when it is published and refused).
            guard let changes = try? applier.apply(operations, to: states) else { continue }
            for change in changes { states[change.key] = change.after }
        }
        return states.compactMap { key, state in
            guard keys?.contains(key) ?? true else { return nil }
            return state.body.map { SyncObject(key: key, version: server[key]?.version ?? 0, body: $0) }
        }
    }

    /// Whether the partition's copy has caught up since the client connected.
    public func isUpToDate(_ partition: Partition) -> Bool { upToDate.contains(partition) }

    /// The connection status now.
    public var connectionStatus: ConnectionStatus { status }

    /// Writes not yet acknowledged by the server, and attached blobs not yet uploaded.
    public func unacknowledgedWrites() throws -> Int { try store.unacknowledgedCount() }

    // MARK: Writing

    /// Applies operations to the local copy at once and queues them for the server; returns
    /// the upload's request id. Operations that fail against an open partition's local copy
    /// (an unknown object, a wrong path) are refused here with their error.
    @discardableResult
    public func write(_ operations: [SyncOperation], in partition: Partition) throws -> String {
        try check(operations, in: partition)
        let requestId = try store.enqueue(operations, in: partition)
        publish(partition)
        wakeUploader()
        stateChanged()
        return requestId
    }

    /// Refuses a write the server could never take (too large) or that fails against an open
    /// partition's copy (the server's objects and the pending writes, not the drafts).
    func check(_ operations: [SyncOperation], in partition: Partition) throws {
        // The longest request id the store makes is a UUID: measure the message with one.
        let message = ClientMessage.upload(requestId: UUID().uuidString, partition: partition, operations: operations)
        let size = message.json.jsonBytes.count
        guard size <= configuration.maximumUploadBytes else {
            throw SyncError(.payloadTooLarge, "the upload would be \(size) bytes; the server takes at most \(configuration.maximumUploadBytes)")
        }
        if try store.isOpen(partition) {
            var states = try view(of: partition).reduce(into: [ObjectKey: DocumentState]()) { $0[$1.key] = $1.state }
            for (key, object) in try store.serverObjects(of: partition) where states[key] == nil {
                states[key] = object.state
            }
            _ = try OperationApplier(partition: partition).apply(operations, to: states)
        }
    }

    // MARK: Observing

    /// The current state of the partition at once, then a snapshot after every change.
    public func updates(of partition: Partition) -> AsyncStream<PartitionSnapshot> {
        let (stream, continuation) = AsyncStream.makeStream(of: PartitionSnapshot.self, bufferingPolicy: .bufferingNewest(16))
        let id = UUID()
        observers[partition, default: [:]][id] = continuation
        continuation.onTermination = { _ in Task { await self.removeObserver(partition, id) } }
        if let snapshot = try? snapshot(of: partition) { continuation.yield(snapshot) }
        return stream
    }

    /// The last 100 writes the server refused since this client was made (each also reported
    /// as ``ClientEvent/rejected(requestId:partition:error:)``), oldest first: what a
    /// short-lived tool reports before it exits.
    public var refusedWrites: [RefusedWrite] { refusals }

    /// Connection changes, refused writes, ended subscriptions, sign-outs.
    public func events() -> AsyncStream<ClientEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: ClientEvent.self, bufferingPolicy: .bufferingNewest(256))
        let id = UUID()
        eventObservers[id] = continuation
        continuation.onTermination = { _ in Task { await self.removeEventObserver(id) } }
        continuation.yield(.status(status))
        return stream
    }

    private func removeObserver(_ partition: Partition, _ id: UUID) {
        observers[partition]?.removeValue(forKey: id)
    }

    private func removeEventObserver(_ id: UUID) {
        eventObservers.removeValue(forKey: id)
    }

    func snapshot(of partition: Partition) throws -> PartitionSnapshot {
        PartitionSnapshot(
            partition: partition, objects: try objects(in: partition), upToDate: upToDate.contains(partition),
            pendingWrites: try store.pending(in: partition).count, progress: progress[partition])
    }

    func publish(_ partition: Partition) {
        guard let watchers = observers[partition], !watchers.isEmpty, let snapshot = try? snapshot(of: partition) else { return }
        for watcher in watchers.values { watcher.yield(snapshot) }
    }

    func emit(_ event: ClientEvent) {
        for observer in eventObservers.values { observer.yield(event) }
    }

    func setStatus(_ new: ConnectionStatus) {
        guard new != status else { return }
        defer { stateChanged() }
        status = new
        emit(.status(new))
        if new != .online {
            subscribed.removeAll()
            let partitions = upToDate
            upToDate.removeAll()
            progress.removeAll()
            for partition in partitions { publish(partition) }
        }
    }

    // MARK: Waiting (for command-line tools and tests)

    /// Waits until every queued write is acknowledged (or refused); `false` on timeout.
    public func waitUntilUploaded(timeout: Duration) async -> Bool {
        await wait(timeout: timeout) { (try? store.unacknowledgedCount()) == 0 }
    }

    /// Waits until the partition has caught up with the server; `false` on timeout.
    public func waitUntilUpToDate(_ partition: Partition, timeout: Duration) async -> Bool {
        await wait(timeout: timeout) { upToDate.contains(partition) }
    }

    /// Waits until disconnected; `false` on timeout.
    public func waitUntilOffline(timeout: Duration) async -> Bool {
        await wait(timeout: timeout) { status != .online }
    }

    /// Waits until connected; `false` on timeout.
    public func waitUntilOnline(timeout: Duration) async -> Bool {
        await wait(timeout: timeout) { status == .online }
    }

    /// Waits until `condition` holds, checking it again each time the client's state changes
    /// (``stateChanged()``) rather than on a clock; `false` when `timeout` passes first.
    func wait(timeout: Duration, until condition: () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        // One wake-up at the deadline, for every waiter: each checks its own.
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(until: deadline)) != nil else { return }
            await self?.stateChanged()
        }
        defer { timer.cancel() }
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            await withCheckedContinuation { continuation in changeWaiters[UUID()] = continuation }
        }
        return true
    }

    /// Wakes the waiters of ``wait(timeout:until:)`` to check their conditions again: called
    /// after every message from the server, status change, write and blob upload.
    func stateChanged() {
        let waiters = changeWaiters
        changeWaiters.removeAll()
        for waiter in waiters.values { waiter.resume() }
    }

    /// Runs a read or change of the local store, reporting a failure as
    /// ``ClientEvent/storeFailed(_:_:)`` (and in the log) instead of dropping it; `fallback` is
    /// the result then.
    func storing<T>(_ what: String, or fallback: T, _ body: () throws -> T) -> T {
        do {
            return try body()
        } catch {
            logger.error("the local store failed", metadata: ["while": "\(what)", "error": "\(error)"])
            emit(.storeFailed(what, "\(error)"))
            return fallback
        }
    }

    func storing(_ what: String, _ change: () throws -> Void) {
        storing(what, or: (), change)
    }
}
