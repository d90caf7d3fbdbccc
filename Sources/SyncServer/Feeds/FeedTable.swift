import DequeModule
import PartitionSync
import SyncProtocol
import SyncStorage

/// How a subscription's request to join a live feed was answered.
enum FeedJoinResult: Equatable {
    /// It now receives every commit after its position.
    case live
    /// The feed is ahead of it: read further and ask again.
    case behind
}

/// The hub's live feeds, one per partition with live subscribers, as a state machine without
/// I/O: its inputs are commits (announced or made here), joins and leaves, the pages its reads
/// return and the outcomes of deliveries; its outputs say what the ``SubscriptionHub`` must do
/// next (start a read, hand the outbox to the members, tell members to catch up alone). The hub
/// holds it under its lock and acts outside it, so no subscriber is called under the lock.
///
/// A feed reads at most once at a time (`fetching`, with `dirty` for a commit that arrives
/// meanwhile), and hands its pages over in order through one drainer at a time (`delivering`).
struct FeedTable {
    typealias Subscriber = any FeedSubscriber

    struct Member {
        let subscriber: Subscriber
        let generation: Int
        var position: FeedPosition
        /// The timeline of the commit at the position's version (``CursorPosition/timeline``).
        var timeline: Int32
    }

    struct Feed {
        /// Tells this feed from a later one of the same partition (a drainer of an ended feed
        /// stops rather than deliver the new one's pages).
        let id: Int
        /// Where the feed has read up to (its outbox included): the next read starts there.
        var position: CursorPosition
        var members: [ObjectIdentifier: Member] = [:]
        var fetching = false
        var dirty = false
        /// Pages read or committed and not yet handed to the members, in order, with the
        /// position each ends at. The feed's ``position`` already counts them.
        var outbox: Deque<(page: EncodedChangeBatch, end: CursorPosition)> = []
        /// A drainer is handing the outbox to the members.
        var delivering = false

        /// Marks the feed to read; whether a read must start (none is running).
        mutating func needsRead() -> Bool {
            if fetching {
                dirty = true
                return false
            }
            fetching = true
            return true
        }

        /// Queues a page; whether the caller must now drain the outbox (no one else is).
        mutating func enqueue(_ page: EncodedChangeBatch, at end: CursorPosition) -> Bool {
            outbox.append((page, end))
            position = end
            guard !delivering else { return false }
            delivering = true
            return true
        }

        /// Whether nothing holds the feed any longer: no member, no read, no drainer.
        var isIdle: Bool { members.isEmpty && !fetching && !delivering }
    }

    /// One page for the members that were behind its end when it was taken from the outbox.
    struct Delivery {
        let feed: Int
        let page: EncodedChangeBatch
        let end: CursorPosition
        let members: [(id: ObjectIdentifier, member: Member)]
    }

    /// What a commit made by this process asks of the hub.
    enum LocalCommitAction: Equatable {
        /// No feed follows the partition, or its read already covers the commit.
        case none
        /// The feed cannot take the commit from memory: read the partition.
        case read
        /// The commit's page was queued; `drain`: hand the outbox to the members (no one else
        /// is doing it).
        case queued(drain: Bool)
    }

    /// What a page read for a feed asks of the hub.
    struct ReadOutcome {
        /// Read again: the page was not the last, or a commit arrived during the read.
        var readAgain = false
        /// Drain the outbox.
        var drain = false
        /// The feed ended because its position can no longer be continued: these members catch
        /// up alone.
        var resync: [Member] = []
    }

    private(set) var feeds: [Partition: Feed] = [:]
    private var nextFeed = 0

    // MARK: Commits

    /// A commit announced a new version of a partition (or the poll found one); whether a
    /// read of its feed must start.
    mutating func committed(_ partition: Partition, version: Int64) -> Bool {
        guard var feed = feeds[partition], version > feed.position.version else { return false }
        defer { feeds[partition] = feed }
        return feed.needsRead()
    }

    /// A commit of this process, before its notification: a feed exactly at the version
    /// before, on the commit's timeline, takes the commit's page (made by `page` only then)
    /// without reading; any other feed reads as for a notification. A feed on another timeline
    /// (the database failed over, PartitionHistory) reads whatever the version: its position
    /// may be from commits the database no longer has, and only a read can tell.
    mutating func committedLocally(
        _ partition: Partition, version: Int64, timeline: Int32, page: () -> EncodedChangeBatch
    ) -> LocalCommitAction {
        guard var feed = feeds[partition] else { return .none }
        guard feed.position.timeline == timeline || feed.position.version == 0 else {
            defer { feeds[partition] = feed }
            return feed.needsRead() ? .read : .none
        }
        guard !feed.fetching, FeedPosition(feed.position) == FeedPosition(version: version - 1) else {
            return committed(partition, version: version) ? .read : .none
        }
        let drain = feed.enqueue(page(), at: CursorPosition(epoch: feed.position.epoch, version: version, timeline: timeline))
        feeds[partition] = feed
        return .queued(drain: drain)
    }

    /// The listener (re)connected: notifications may have been missed, so every feed reads
    /// from its position. The feeds whose read must start.
    mutating func listenerConnected() -> [Partition] {
        var started: [Partition] = []
        for partition in Array(feeds.keys) where feeds[partition]!.needsRead() {
            started.append(partition)
        }
        return started
    }

    // MARK: Membership

    /// A subscription asks to receive a partition live from `start` (where it has delivered
    /// up to); whether a read of the feed must start.
    mutating func join(_ subscriber: Subscriber, partition: Partition, generation: Int, from start: CursorPosition) -> (
        result: FeedJoinResult, read: Bool
    ) {
        let isNew = feeds[partition] == nil
        if isNew { nextFeed += 1 }
        var feed = feeds[partition] ?? Feed(id: nextFeed, position: start)
        let position = FeedPosition(start)
        if !isNew, position < FeedPosition(feed.position) { return (.behind, false) }
        if !isNew, start.timeline != feed.position.timeline, start.version != 0, feed.position.version != 0 {
            // Not behind the feed, but on another timeline: one of the two positions is from
            // commits the database no longer has (PartitionHistory). The subscriber reads again
            // from its own, and the feed reads from its own: a read of a lost position resets.
            defer { feeds[partition] = feed }
            return (.behind, feed.needsRead())
        }
        feed.members[ObjectIdentifier(subscriber)] = Member(
            subscriber: subscriber, generation: generation, position: position, timeline: start.timeline)
        // A new feed, or a subscriber ahead of the feed, may have missed notifications before
        // it joined: read once now so nothing committed since is left behind.
        let read = (isNew || FeedPosition(feed.position) < position) && feed.needsRead()
        feeds[partition] = feed
        return (.live, read)
    }

    /// A subscription stops following a partition live.
    mutating func leave(_ subscriber: ObjectIdentifier, partition: Partition) {
        guard var feed = feeds[partition] else { return }
        feed.members.removeValue(forKey: subscriber)
        feeds[partition] = feed.isIdle ? nil : feed
    }

    // MARK: Reading

    /// A read of the feed begins (again): the position to read from; `nil` when the feed has
    /// ended or lost its members (it is then removed, and the read stops).
    mutating func readBegins(_ partition: Partition) -> CursorPosition? {
        guard var feed = feeds[partition] else { return nil }
        if feed.members.isEmpty {
            feeds.removeValue(forKey: partition)
            return nil
        }
        feed.dirty = false
        feeds[partition] = feed
        return feed.position
    }

    /// A read returned a page, which ends at `end`; `history`: the partition's head and
    /// history as the read found them, when known.
    mutating func read(
        _ partition: Partition, page: EncodedChangeBatch, end: CursorPosition, history: (head: Int64, history: PartitionHistory)? = nil
    ) -> ReadOutcome {
        guard var feed = feeds[partition] else { return ReadOutcome() }
        if page.reset {
            // The feed's position can no longer be continued from: every member catches up alone.
            feeds.removeValue(forKey: partition)
            return ReadOutcome(resync: Array(feed.members.values))
        }
        var outcome = ReadOutcome()
        if let (head, history) = history {
            // A member ahead of the feed may hold a position of commits a failover lost (on
            // the feed's timeline too, when the feed's own position is older than the loss):
            // it catches up alone, and is reset. One ahead of this read on the partition's
            // timeline (its own read was newer) waits for the feed, as before.
            for (id, member) in feed.members
            where !history.admits(version: member.position.version, timeline: member.timeline, head: head) {
                feed.members.removeValue(forKey: id)
                outcome.resync.append(member)
            }
        }
        outcome.drain = feed.enqueue(page, at: end)
        outcome.readAgain = !page.upToDate || feed.dirty
        if !outcome.readAgain { feed.fetching = false }
        feeds[partition] = feed
        return outcome
    }

    // MARK: Delivering

    /// The next page of the feed's outbox and who it goes to (the members behind its end);
    /// `nil` when the outbox is empty (the drainer stops) or the feed `expected` ended.
    mutating func nextDelivery(_ partition: Partition, feed expected: Int?) -> Delivery? {
        guard var feed = feeds[partition], expected.map({ $0 == feed.id }) ?? true else { return nil }
        guard let (page, end) = feed.outbox.popFirst() else {
            feed.delivering = false
            feeds[partition] = feed.isIdle ? nil : feed
            return nil
        }
        feeds[partition] = feed
        let reached = FeedPosition(end)
        let members = feed.members.filter { $0.value.position < reached }.map { (id: $0.key, member: $0.value) }
        return Delivery(feed: feed.id, page: page, end: end, members: members)
    }

    /// What the members of a delivery did with it: those that took it are at its end now;
    /// those that refused it (no longer live) leave the feed. Outcomes of an earlier
    /// generation of a member, or of an ended feed, change nothing.
    mutating func delivered(_ delivery: Delivery, partition: Partition, outcomes: [(id: ObjectIdentifier, generation: Int, accepted: Bool)]) {
        guard var feed = feeds[partition], feed.id == delivery.feed else { return }
        for (id, generation, accepted) in outcomes {
            guard let member = feed.members[id], member.generation == generation else { continue }
            if !accepted {
                feed.members.removeValue(forKey: id)
            } else if member.position < FeedPosition(delivery.end) {
                feed.members[id]?.position = FeedPosition(delivery.end)
                feed.members[id]?.timeline = delivery.end.timeline
            }
        }
        feeds[partition] = feed
    }

    // MARK: Counts

    /// Feeds and live members.
    var counts: (feeds: Int, members: Int) { (feeds.count, feeds.values.reduce(0) { $0 + $1.members.count }) }

    /// The live members of each of these partitions.
    func members(of partitions: [Partition]) -> [Partition: Int] {
        Dictionary(uniqueKeysWithValues: partitions.map { ($0, feeds[$0]?.members.count ?? 0) })
    }
}
