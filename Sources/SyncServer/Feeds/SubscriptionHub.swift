import CoreMetrics
import Locking
import Logging
import NIOCore
import PartitionSync
import ServiceLifecycle
import SyncProtocol
import SyncStorage

/// Fans committed changes out to the live subscriptions of this server instance.
///
/// Commits announce `(partition, version)` through PostgreSQL (see ``ChangeListener``). For
/// each partition with live subscribers the hub keeps one feed: it reads the partition's new
/// changes once, after the feed's position, and hands the same page (encoded once) to every
/// subscriber, rather than each subscriber querying on its own. A subscriber that was
/// catching up joins the feed when its own reading reaches the feed's position.
///
/// The hub also routes changes of permission inputs to the sessions whose decisions depend
/// on them.
package final class SubscriptionHub: Service, Sendable {
    struct State {
        var feeds = FeedTable()
        var inputs = InputWatchTable()
    }

    enum Event: Sendable {
        case fetch(Partition)
    }

    typealias JoinResult = FeedJoinResult

    let store: ObjectStore
    let batchSize: Int
    let pollInterval: Duration
    let time: SyncClock
    let logger: Logger
    let metrics: ServerMetrics
    private let state = Locked(State())
    private let events: AsyncStream<Event>
    private let eventSink: AsyncStream<Event>.Continuation

    init(store: ObjectStore, batchSize: Int, pollInterval: Duration = .seconds(1), time: SyncClock, metrics: ServerMetrics, logger: Logger) {
        self.store = store
        self.batchSize = batchSize
        self.pollInterval = pollInterval
        self.time = time
        self.metrics = metrics
        self.logger = logger
        (events, eventSink) = AsyncStream.makeStream(of: Event.self)
    }

    /// Reads the feeds that have new commits, each in a task of its own, until shutdown; and
    /// polls the versions of the partitions it follows every ``pollInterval``.
    package func run() async {
        await withDiscardingTaskGroup { group in
            group.addTask { await self.poll() }
            for await event in events.cancelOnGracefulShutdown() {
                switch event {
                case .fetch(let partition):
                    group.addTask { await self.fetch(partition) }
                }
            }
            group.cancelAll()
        }
    }

    /// What a transaction that lets go of its changes keeps for this hub
    /// (``ObjectStore/screenReleasedChanges(_:)``): a change that creates an object a decision
    /// found absent, or that can change a decision depending on its partition.
    var changeScreen: ChangeScreen {
        ChangeScreen(
            generation: { [weak self] in self?.state.withLock { $0.inputs.generation } ?? 0 },
            keeps: { [weak self] partition, change in
                guard let self else { return true }
                let (watchers, createsAbsent) = self.state.withLock { state in
                    (state.inputs.watchers(of: partition), change.after.body != nil && !state.inputs.watchers(ofAbsent: change.key).isEmpty)
                }
                return createsAbsent || watchers.contains { $0.permissionDecisions(dependingOn: .partition(partition), canChangeWith: [change]) }
            })
    }

    // MARK: Input from the change listener

    /// A commit announced a new version of a partition, or the poll found one.
    func committed(_ partition: Partition, version: Int64, polled: Bool = false) {
        let (read, watchers) = state.withLock { state in
            (state.feeds.committed(partition, version: version), state.inputs.committed(partition, version: version, polled: polled))
        }
        if read { eventSink.yield(.fetch(partition)) }
        for watcher in watchers { watcher.permissionInputChanged(.partition(partition), changes: nil) }
    }

    /// A commit of this process (``ObjectStore/observeCommits(_:)``), before its notification:
    /// a feed that is exactly at the version before gets the commit's changes from memory,
    /// without reading the partition again; any other feed reads as for a notification.
    func committedLocally(_ commit: Commit) {
        guard let epoch = store.knownEpoch else {
            for changes in commit.partitions { committed(changes.partition, version: changes.version) }
            return
        }
        for changes in commit.partitions {
            let (partition, version) = (changes.partition, changes.version)
            // The transaction let go of these changes (it wrote many large objects): the feeds
            // read them, and the decisions that depend on the partition see what the screen
            // kept (all of it for one that began depending on it after the screen asked).
            guard let changes = changes.changes else {
                let kept = changes.kept
                let (read, watchers, created) = state.withLock { state in
                    (
                        state.feeds.committed(partition, version: version),
                        state.inputs.committed(partition, version: version, screenedAt: commit.screenedAt ?? 0),
                        state.inputs.created(by: kept)
                    )
                }
                if read { eventSink.yield(.fetch(partition)) }
                for (watcher, late) in watchers { watcher.permissionInputChanged(.partition(partition), changes: late ? nil : kept) }
                for (change, watchers) in created {
                    for watcher in watchers { watcher.permissionInputChanged(.absentObject(change.key), changes: [change]) }
                }
                continue
            }
            let (action, watchers, created) = state.withLock { state in
                let watchers = state.inputs.committed(partition, version: version, polled: false)
                let created = state.inputs.created(by: changes)
                let action = state.feeds.committedLocally(partition, version: version, timeline: commit.timeline) {
                    EncodedChangeBatch(
                        partition: partition,
                        objects: changes.map { change in
                            EncodedChangeBatch.Object(key: change.key, version: version, compactBody: change.after.body.map { _ in change.encodedBody ?? [] })
                        },
                        cursor: CursorPosition(epoch: epoch, version: version, timeline: commit.timeline).cursor, upToDate: true,
                        reset: false, version: version)
                }
                return (action, watchers, created)
            }
            switch action {
            case .none: break
            case .read: eventSink.yield(.fetch(partition))
            case .queued(let mustDrain):
                metrics.localDeliveries.increment()
                if mustDrain { drain(partition) }
            }
            for watcher in watchers { watcher.permissionInputChanged(.partition(partition), changes: changes) }
            for (change, watchers) in created {
                for watcher in watchers { watcher.permissionInputChanged(.absentObject(change.key), changes: [change]) }
            }
        }
    }

    /// The listener (re)connected: notifications may have been missed, so every feed reads
    /// from its position, and every permission decision is checked again.
    func listenerConnected() {
        let (partitions, watchers) = state.withLock { state in
            (state.feeds.listenerConnected(), state.inputs.everyPartitionWatch)
        }
        for partition in partitions { eventSink.yield(.fetch(partition)) }
        for (input, watcher) in watchers { watcher.permissionInputChanged(input, changes: nil) }
    }

    // MARK: Membership

    /// Asks to receive a partition live from `start` (a complete or partial version the
    /// subscriber has delivered up to). The subscriber has made its subscription live before
    /// it asks (the hub calls no subscriber under its lock); on `.behind` it makes it catch
    /// up again.
    func join(_ subscriber: any FeedSubscriber, partition: Partition, generation: Int, from start: CursorPosition) -> JoinResult {
        let (result, read) = state.withLock { state in
            state.feeds.join(subscriber, partition: partition, generation: generation, from: start)
        }
        if read { eventSink.yield(.fetch(partition)) }
        return result
    }

    /// Stops sending a partition live to a subscriber.
    func leave(_ subscriber: any FeedSubscriber, partition: Partition) {
        state.withLock { $0.feeds.leave(ObjectIdentifier(subscriber), partition: partition) }
    }

    /// Routes changes of `inputs` to the subscriber's permission checks: commits of a
    /// partition input, the creation of an absent object.
    ///
    /// `versionsRead` gives, for partitions a decision read before it watched them, the version
    /// it read: a commit after it that this hub has already seen is returned at once (the
    /// subscriber missed it), and one it has not seen yet is reported by the next poll.
    /// - Returns: the inputs that changed since they were read.
    func watch(_ inputs: [PermissionInput], versionsRead: [Partition: Int64] = [:], for subscriber: any FeedSubscriber) -> [PermissionInput] {
        state.withLock { $0.inputs.watch(inputs, versionsRead: versionsRead, for: subscriber) }
    }

    /// Stops routing changes of `inputs` to the subscriber.
    func unwatch(_ inputs: [PermissionInput], for subscriber: any FeedSubscriber) {
        state.withLock { $0.inputs.unwatch(inputs, for: ObjectIdentifier(subscriber)) }
    }

    /// Counts for tests and metrics: feeds and live members.
    var counts: (feeds: Int, members: Int) { state.withLock { $0.feeds.counts } }

    /// The live subscribers of each of these partitions on this instance (sessions still
    /// catching up are not counted), for the console.
    func members(of partitions: [Partition]) -> [Partition: Int] {
        state.withLock { $0.feeds.members(of: partitions) }
    }

    /// Watched permission inputs, for metrics.
    var watchedInputs: Int { state.withLock { $0.inputs.count } }

    // MARK: Polling

    /// The safety net under notifications: commits are announced after they commit, so a
    /// process that dies in between leaves one unannounced. Every ``pollInterval`` this reads
    /// the versions of the partitions it follows (one statement) and treats a newer one like a
    /// notification. It also looks for the objects permission decisions found absent: another
    /// instance's commit that creates one is announced by partition only, so this is how its
    /// creation reaches the decisions here (within one interval).
    private func poll() async {
        await Periodic(every: pollInterval, time: time, startsAtOnce: false).run {
            let (partitions, absent) = state.withLock { state in
                (Array(Set(state.feeds.feeds.keys).union(state.inputs.partitions.keys)), Array(state.inputs.absentObjects.keys))
            }
            do {
                if !partitions.isEmpty {
                    let heads = try await store.headVersions(of: partitions)
                    for (partition, version) in heads {
                        committed(partition, version: version, polled: true)
                    }
                }
                if !absent.isEmpty {
                    let created = try await store.livePartitions(of: absent)
                    let watchers = state.withLock { state in
                        created.keys.flatMap { key in state.inputs.watchers(ofAbsent: key).map { (key, $0) } }
                    }
                    for (key, watcher) in watchers { watcher.permissionInputChanged(.absentObject(key), changes: nil) }
                }
            } catch {
                if Task.isCancelled { return }
                logger.warning("polling partition versions failed", metadata: ["error": "\(error)"])
            }
        }
    }

    // MARK: Reading a feed

    /// Reads a partition's new pages and delivers them until the feed is up to date.
    private func fetch(_ partition: Partition) async {
        var failures = 0
        while true {
            guard let position = state.withLock({ $0.feeds.readBegins(partition) }) else { return }
            let page: PositionedPage
            do {
                page = try await store.encodedChanges(in: partition, from: position, limit: batchSize)
                metrics.feedReads.increment()
                failures = 0
            } catch {
                failures += 1
                logger.warning("reading a feed failed", metadata: ["partition": "\(partition)", "error": "\(error)"])
                try? await time.sleep(for: .milliseconds(min(100 * failures, 2_000)))
                if Task.isCancelled { return }
                continue
            }
            let outcome = state.withLock { $0.feeds.read(partition, page: page.batch, end: page.end, history: page.history) }
            for member in outcome.resync { member.subscriber.resync(partition: partition, generation: member.generation) }
            if outcome.drain { drain(partition) }
            if !outcome.readAgain { return }
        }
    }

    // MARK: Delivering a feed

    /// Hands a feed's queued pages to its members, in order, until the outbox is empty: the
    /// members and their positions are read under the lock, each page is encoded and handed
    /// over outside it, and the positions are written back under it.
    private func drain(_ partition: Partition) {
        var feedID: Int?
        while let delivery = state.withLock({ $0.feeds.nextDelivery(partition, feed: feedID) }) {
            feedID = delivery.feed
            let outcomes = deliver(delivery, partition: partition)
            state.withLock { $0.feeds.delivered(delivery, partition: partition, outcomes: outcomes) }
        }
    }

    /// Hands a page to every member of the delivery, each getting only the objects after its
    /// own position; members at the same position share one encoding. Whether each took it
    /// (a member with nothing new counts as having taken it).
    private func deliver(_ delivery: FeedTable.Delivery, partition: Partition) -> [(id: ObjectIdentifier, generation: Int, accepted: Bool)] {
        var encoded: [FeedPosition: (bytes: ByteBuffer, count: Int)] = [:]
        var outcomes: [(id: ObjectIdentifier, generation: Int, accepted: Bool)] = []
        outcomes.reserveCapacity(delivery.members.count)
        for (id, member) in delivery.members {
            let message: (bytes: ByteBuffer, count: Int)
            if let cached = encoded[member.position] {
                message = cached
            } else {
                let objects = delivery.page.objects.filter { member.position.precedes(version: $0.version, key: $0.key) }
                message = (delivery.page.messageBuffer(objects: objects, reset: false), objects.count)
                encoded[member.position] = message
            }
            if message.count == 0 {
                // Nothing new for this member (a read after a join found no commit): say nothing.
                outcomes.append((id, member.generation, true))
                continue
            }
            let accepted = member.subscriber.deliver(
                partition: partition, generation: member.generation, end: delivery.end, bytes: message.bytes,
                objectCount: message.count)
            if accepted { metrics.pushed(message.count) }
            outcomes.append((id, member.generation, accepted))
        }
        return outcomes
    }
}
