import CoreMetrics
import DequeModule
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
/// changes once, after the feed's cursor, and hands the same page (encoded once) to every
/// subscriber, rather than each subscriber querying on its own. A subscriber that was
/// catching up joins the feed when its own reading reaches the feed's position.
///
/// The hub also routes changes of permission inputs to the sessions whose decisions depend
/// on them.
package final class SubscriptionHub: Service, Sendable {
    struct Member {
        let subscriber: any FeedSubscriber
        let generation: Int
        var position: FeedPosition
    }

    struct Feed {
        /// Tells this feed from a later one of the same partition (a deliverer of an ended
        /// feed stops rather than deliver the new one's pages).
        let id: Int
        var cursor: Cursor
        var position: FeedPosition
        var members: [ObjectIdentifier: Member] = [:]
        var fetching = false
        var dirty = false
        /// Pages read or committed and not yet handed to the members, in order, with the
        /// position each ends at. The feed's ``position`` already counts them.
        var outbox: Deque<(page: EncodedChangeBatch, end: FeedPosition)> = []
        /// A task is handing the outbox to the members (one at a time: pages stay in order).
        var delivering = false
    }

    /// One page for the members that were behind its end when it was taken from the outbox.
    struct Delivery {
        let feed: Int
        let page: EncodedChangeBatch
        let end: FeedPosition
        let members: [(id: ObjectIdentifier, member: Member)]
    }

    struct State {
        var feeds: [Partition: Feed] = [:]
        var nextFeed = 0
        var watchers: [Partition: [ObjectIdentifier: WeakSubscriber]] = [:]
        /// The newest version seen of each watched partition: a permission input is checked
        /// again once per new version, whether a notification or the poll reports it.
        var inputVersions: [Partition: Int64] = [:]
        /// Objects permission decisions found absent: their creation, in any partition, can
        /// change the decisions.
        var absentWatchers: [ObjectKey: [ObjectIdentifier: WeakSubscriber]] = [:]
    }

    struct WeakSubscriber {
        weak var subscriber: (any FeedSubscriber)?
    }

    enum Event: Sendable {
        case fetch(Partition)
    }

    /// How a subscription's request to join a live feed was answered.
    enum JoinResult {
        /// It now receives every commit after its position.
        case live
        /// The feed is ahead of it: read further and ask again.
        case behind
    }

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

    // MARK: Input from the change listener

    /// A commit announced a new version of a partition, or the poll found one.
    ///
    /// A watched partition whose version was not known yet counts as changed when a
    /// notification says so, not when the poll first reads it.
    func committed(_ partition: Partition, version: Int64, polled: Bool = false) {
        let (fetch, watchers) = state.withLock { state -> (Bool, [any FeedSubscriber]) in
            let watchers = Self.changedInput(partition, version: version, polled: polled, in: &state)
            return (Self.startFetch(partition, version: version, in: &state), watchers)
        }
        if fetch { eventSink.yield(.fetch(partition)) }
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
            let (fetch, watchers, deliver, created) = state.withLock { state -> (Bool, [any FeedSubscriber], Bool, [(ObjectChange, [any FeedSubscriber])]) in
                let watchers = Self.changedInput(partition, version: version, polled: false, in: &state)
                let created = Self.createdAbsentObjects(changes.changes, in: state)
                guard var feed = state.feeds[partition], !feed.fetching, feed.position == FeedPosition(version: version - 1) else {
                    return (Self.startFetch(partition, version: version, in: &state), watchers, false, created)
                }
                let end = FeedPosition(version: version)
                let page = EncodedChangeBatch(
                    partition: partition,
                    objects: changes.changes.map { change in
                        EncodedChangeBatch.Object(key: change.key, version: version, compactBody: change.after.body.map { _ in change.encodedBody ?? [] })
                    },
                    cursor: CursorPosition(epoch: epoch, version: version).cursor, upToDate: true, reset: false, version: version)
                let deliver = Self.enqueue(page, at: end, to: &feed)
                metrics.localDeliveries.increment()
                feed.cursor = page.cursor
                feed.position = end
                state.feeds[partition] = feed
                return (false, watchers, deliver, created)
            }
            if fetch { eventSink.yield(.fetch(partition)) }
            if deliver { drain(partition) }
            for watcher in watchers { watcher.permissionInputChanged(.partition(partition), changes: changes.changes) }
            for (change, watchers) in created {
                for watcher in watchers { watcher.permissionInputChanged(.absentObject(change.key), changes: [change]) }
            }
        }
    }

    /// Notes a new version of a partition permission decisions may depend on; the
    /// subscribers to tell.
    private static func changedInput(_ partition: Partition, version: Int64, polled: Bool, in state: inout State) -> [any FeedSubscriber] {
        guard let entries = state.watchers[partition] else { return [] }
        let known = state.inputVersions[partition]
        state.inputVersions[partition] = max(version, known ?? version)
        guard known.map({ version > $0 }) ?? !polled else { return [] }
        return entries.values.compactMap(\.subscriber)
    }

    /// The changes that create an object a permission decision found absent, each with the
    /// subscribers whose decisions depend on it.
    private static func createdAbsentObjects(_ changes: [ObjectChange], in state: State) -> [(ObjectChange, [any FeedSubscriber])] {
        guard !state.absentWatchers.isEmpty else { return [] }
        return changes.compactMap { change in
            guard change.after.body != nil, let entries = state.absentWatchers[change.key] else { return nil }
            return (change, entries.values.compactMap(\.subscriber))
        }
    }

    /// Marks a feed behind `version` to read; whether a read must start (none is running).
    private static func startFetch(_ partition: Partition, version: Int64, in state: inout State) -> Bool {
        guard var feed = state.feeds[partition], version > feed.position.version else { return false }
        defer { state.feeds[partition] = feed }
        if feed.fetching {
            feed.dirty = true
            return false
        }
        feed.fetching = true
        return true
    }

    /// The listener (re)connected: notifications may have been missed, so every feed reads
    /// from its cursor, and every permission decision is checked again.
    func listenerConnected() {
        let (partitions, watchers) = state.withLock { state -> ([Partition], [(PermissionInput, any FeedSubscriber)]) in
            var started: [Partition] = []
            for (partition, var feed) in state.feeds {
                if feed.fetching {
                    feed.dirty = true
                } else {
                    feed.fetching = true
                    started.append(partition)
                }
                state.feeds[partition] = feed
            }
            let watchers = state.watchers.flatMap { partition, entries in
                entries.values.compactMap(\.subscriber).map { (PermissionInput.partition(partition), $0) }
            }
            return (started, watchers)
        }
        for partition in partitions { eventSink.yield(.fetch(partition)) }
        for (input, watcher) in watchers { watcher.permissionInputChanged(input, changes: nil) }
    }

    // MARK: Membership

    /// Asks to receive a partition live from `position` (a complete or partial version the
    /// subscriber has delivered up to). The subscriber has made its subscription live before
    /// it asks (the hub calls no subscriber under its lock); on `.behind` it makes it catch
    /// up again.
    func join(_ subscriber: any FeedSubscriber, partition: Partition, generation: Int, cursor: Cursor, position: FeedPosition) -> JoinResult {
        let (result, fetch) = state.withLock { state -> (JoinResult, Bool) in
            let isNew = state.feeds[partition] == nil
            if isNew { state.nextFeed += 1 }
            var feed = state.feeds[partition] ?? Feed(id: state.nextFeed, cursor: cursor, position: position)
            if !isNew, position < feed.position { return (.behind, false) }
            feed.members[ObjectIdentifier(subscriber)] = Member(subscriber: subscriber, generation: generation, position: position)
            // A new feed, or a subscriber ahead of the feed, may have missed notifications
            // before it joined: read once now so nothing committed since is left behind.
            var fetch = false
            if isNew || feed.position < position {
                if feed.fetching { feed.dirty = true } else { feed.fetching = true; fetch = true }
            }
            state.feeds[partition] = feed
            return (.live, fetch)
        }
        if fetch { eventSink.yield(.fetch(partition)) }
        return result
    }

    /// Stops sending a partition live to a subscriber.
    func leave(_ subscriber: any FeedSubscriber, partition: Partition) {
        state.withLock { state in
            guard var feed = state.feeds[partition] else { return }
            feed.members.removeValue(forKey: ObjectIdentifier(subscriber))
            if feed.members.isEmpty, !feed.fetching, !feed.delivering {
                state.feeds.removeValue(forKey: partition)
            } else {
                state.feeds[partition] = feed
            }
        }
    }

    /// Routes changes of `inputs` to the subscriber's permission checks: commits of a
    /// partition input, the creation of an absent object.
    ///
    /// `versionsRead` gives, for partitions a decision read before it watched them, the version
    /// it read: a commit after it that this hub has already seen is returned at once (the
    /// subscriber missed it), and one it has not seen yet is reported by the next poll.
    /// - Returns: the inputs that changed since they were read.
    func watch(_ inputs: [PermissionInput], versionsRead: [Partition: Int64] = [:], for subscriber: any FeedSubscriber) -> [PermissionInput] {
        state.withLock { state in
            var changed: [PermissionInput] = []
            for input in inputs {
                let entry = WeakSubscriber(subscriber: subscriber)
                switch input {
                case .partition(let partition):
                    state.watchers[partition, default: [:]][ObjectIdentifier(subscriber)] = entry
                    guard let read = versionsRead[partition] else { continue }
                    if let known = state.inputVersions[partition] {
                        if known > read { changed.append(input) }
                    } else {
                        state.inputVersions[partition] = read
                    }
                case .absentObject(let key):
                    state.absentWatchers[key, default: [:]][ObjectIdentifier(subscriber)] = entry
                }
            }
            return changed
        }
    }

    /// Stops routing changes of `inputs` to the subscriber.
    func unwatch(_ inputs: [PermissionInput], for subscriber: any FeedSubscriber) {
        state.withLock { state in
            for input in inputs {
                switch input {
                case .partition(let partition):
                    state.watchers[partition]?.removeValue(forKey: ObjectIdentifier(subscriber))
                    if state.watchers[partition]?.isEmpty == true {
                        state.watchers.removeValue(forKey: partition)
                        state.inputVersions.removeValue(forKey: partition)
                    }
                case .absentObject(let key):
                    state.absentWatchers[key]?.removeValue(forKey: ObjectIdentifier(subscriber))
                    if state.absentWatchers[key]?.isEmpty == true { state.absentWatchers.removeValue(forKey: key) }
                }
            }
        }
    }

    /// Counts for tests and metrics: feeds and live members.
    var counts: (feeds: Int, members: Int) {
        state.withLock { state in (state.feeds.count, state.feeds.values.reduce(0) { $0 + $1.members.count }) }
    }

    /// The live subscribers of each of these partitions on this instance (sessions still
    /// catching up are not counted), for the console.
    func members(of partitions: [Partition]) -> [Partition: Int] {
        state.withLock { state in
            Dictionary(uniqueKeysWithValues: partitions.map { ($0, state.feeds[$0]?.members.count ?? 0) })
        }
    }

    /// Watched permission inputs, for metrics.
    var watchedInputs: Int { state.withLock { $0.watchers.count + $0.absentWatchers.count } }

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
                (Array(Set(state.feeds.keys).union(state.watchers.keys)), Array(state.absentWatchers.keys))
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
                        created.keys.flatMap { key in
                            (state.absentWatchers[key]?.values.compactMap(\.subscriber) ?? []).map { (key, $0) }
                        }
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
            guard let cursor = state.withLock({ state -> Cursor? in
                guard var feed = state.feeds[partition] else { return nil }
                if feed.members.isEmpty {
                    state.feeds.removeValue(forKey: partition)
                    return nil
                }
                feed.dirty = false
                state.feeds[partition] = feed
                return feed.cursor
            }) else { return }
            let page: EncodedChangeBatch
            do {
                page = try await store.encodedChanges(in: partition, after: cursor, limit: batchSize)
                metrics.feedReads.increment()
                failures = 0
            } catch {
                failures += 1
                logger.warning("reading a feed failed", metadata: ["partition": "\(partition)", "error": "\(error)"])
                try? await time.sleep(for: .milliseconds(min(100 * failures, 2_000)))
                if Task.isCancelled { return }
                continue
            }
            let (again, deliver, resync) = state.withLock { state -> (Bool, Bool, [Member]) in
                guard var feed = state.feeds[partition] else { return (false, false, []) }
                if page.reset {
                    // The feed's cursor can no longer be continued from: every member catches up alone.
                    state.feeds.removeValue(forKey: partition)
                    return (false, false, Array(feed.members.values))
                }
                guard let next = CursorPosition(page.cursor) else { return (false, false, []) }
                let position = FeedPosition(version: next.version, after: next.after)
                let deliver = Self.enqueue(page, at: position, to: &feed)
                feed.cursor = page.cursor
                feed.position = position
                let again = !page.upToDate || feed.dirty
                if !again { feed.fetching = false }
                state.feeds[partition] = feed
                return (again, deliver, [])
            }
            for member in resync { member.subscriber.resync(partition: partition, generation: member.generation) }
            if deliver { drain(partition) }
            if !again { return }
        }
    }

    // MARK: Delivering a feed

    /// Queues a page on a feed (under the lock); whether the caller must now deliver the
    /// outbox (``drain(_:)``, after the lock), no one else doing it.
    private static func enqueue(_ page: EncodedChangeBatch, at end: FeedPosition, to feed: inout Feed) -> Bool {
        feed.outbox.append((page, end))
        guard !feed.delivering else { return false }
        feed.delivering = true
        return true
    }

    /// Hands a feed's queued pages to its members, in order, until the outbox is empty: the
    /// members and their positions are read under the lock, each page is encoded and handed
    /// over outside it, and the positions are written back under it.
    private func drain(_ partition: Partition) {
        var feedID: Int?
        while let delivery = nextDelivery(partition, feed: feedID) {
            feedID = delivery.feed
            let outcomes = deliver(delivery, partition: partition)
            state.withLock { state in
                guard var feed = state.feeds[partition], feed.id == delivery.feed else { return }
                for (id, generation, accepted) in outcomes {
                    guard let member = feed.members[id], member.generation == generation else { continue }
                    if !accepted {
                        feed.members.removeValue(forKey: id)
                    } else if member.position < delivery.end {
                        feed.members[id]?.position = delivery.end
                    }
                }
                state.feeds[partition] = feed
            }
        }
    }

    /// The next page of the feed's outbox and who it goes to; `nil` (and the feed no longer
    /// delivering) when the outbox is empty, or the feed ended.
    private func nextDelivery(_ partition: Partition, feed expected: Int?) -> Delivery? {
        state.withLock { state -> Delivery? in
            guard var feed = state.feeds[partition], expected.map({ $0 == feed.id }) ?? true else { return nil }
            guard let (page, end) = feed.outbox.popFirst() else {
                feed.delivering = false
                if feed.members.isEmpty, !feed.fetching {
                    state.feeds.removeValue(forKey: partition)
                } else {
                    state.feeds[partition] = feed
                }
                return nil
            }
            state.feeds[partition] = feed
            let members = feed.members.filter { $0.value.position < end }.map { (id: $0.key, member: $0.value) }
            return Delivery(feed: feed.id, page: page, end: end, members: members)
        }
    }

    /// Hands a page to every member of the delivery, each getting only the objects after its
    /// own position; members at the same position share one encoding. Whether each took it
    /// (a member with nothing new counts as having taken it).
    private func deliver(_ delivery: Delivery, partition: Partition) -> [(ObjectIdentifier, Int, Bool)] {
        var encoded: [FeedPosition: (bytes: ByteBuffer, count: Int)] = [:]
        var outcomes: [(ObjectIdentifier, Int, Bool)] = []
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
                partition: partition, generation: member.generation, cursor: delivery.page.cursor, end: delivery.end, bytes: message.bytes,
                objectCount: message.count)
            if accepted { metrics.pushed(message.count) }
            outcomes.append((id, member.generation, accepted))
        }
        return outcomes
    }
}
