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
    var observers: [Partition: [UUID: AsyncStream<PartitionSnapshot>.Continuation]] = [:]
    var eventObservers: [UUID: AsyncStream<ClientEvent>.Continuation] = [:]
    var answerWaiter: (requestId: String, continuation: CheckedContinuation<UploadAnswer, Never>)?
    var uploadWakeup: CheckedContinuation<Void, Never>?
    var signedInWakeup: CheckedContinuation<Void, Never>?
    /// Whether the current connection got `ready`.
    var sessionAccepted = false
    /// When the current connection last received a message, for the liveness check.
    var lastHeard = ContinuousClock.now
    /// Every change batch received, for diagnostics and tests.
    var received: [BatchRecord] = []
    /// Wakes at the next local expiry (``expireLocally(_:in:at:)``).
    var localExpiryTimer: Task<Void, Never>?

    /// What arrived in a change batch.
    public struct BatchRecord: Sendable, Hashable {
        public var partition: Partition
        public var reset: Bool
        public var upToDate: Bool
        public var keys: [ObjectKey]
    }

    /// The change batches received since the client was created, oldest first.
    public func receivedBatches() -> [BatchRecord] { received }

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
        if status == .online {
            outgoing?.yield(.subscribe(partition: partition, cursor: cursor))
        }
        return PartitionHandle(client: self, partition: partition)
    }

    /// Stops following a partition (its objects stay in the store until it is opened again
    /// and updated from its cursor).
    public func close(_ partition: Partition) throws {
        try store.setOpen(partition, false)
        upToDate.remove(partition)
        outgoing?.yield(.unsubscribe(partition: partition))
    }

    /// The objects of a partition as the app should show them: the server's, with the pending
    /// writes replayed on top.
    public func objects(in partition: Partition) throws -> [SyncObject] {
        if let next = try store.nextLocalExpiry(), next <= Date() { purgeLocalExpiries() }
        return try view(of: partition).sorted { $0.key < $1.key }
    }

    func view(of partition: Partition) throws -> [SyncObject] {
        let server = try store.serverObjects(of: partition)
        var states = server.mapValues(\.state)
        let applier = OperationApplier(partition: partition)
        for upload in try store.pending(in: partition) {
            // A write the server will refuse is not shown; its rejection arrives later.
            guard let changes = try? applier.apply(upload.operations, to: states) else { continue }
            for change in changes { states[change.key] = change.after }
        }
        return states.compactMap { key, state in
            state.body.map { SyncObject(key: key, version: server[key]?.version ?? 0, body: $0) }
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
        let requestId = try store.enqueue(operations, in: partition)
        publish(partition)
        wakeUploader()
        return requestId
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
            pendingWrites: try store.pending(in: partition).count)
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
        status = new
        emit(.status(new))
        if new != .online {
            let partitions = upToDate
            upToDate.removeAll()
            for partition in partitions { publish(partition) }
        }
    }

    // MARK: Waiting (for command-line tools and tests)

    /// Waits until every queued write is acknowledged (or refused); `false` on timeout.
    public func waitUntilUploaded(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if (try? store.unacknowledgedCount()) == 0 { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return (try? store.unacknowledgedCount()) == 0
    }

    /// Waits until the partition has caught up with the server; `false` on timeout.
    public func waitUntilUpToDate(_ partition: Partition, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if upToDate.contains(partition) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return upToDate.contains(partition)
    }

    /// Waits until disconnected; `false` on timeout.
    public func waitUntilOffline(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if status != .online { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return status != .online
    }

    /// Waits until connected; `false` on timeout.
    public func waitUntilOnline(timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if status == .online { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return status == .online
    }
}
