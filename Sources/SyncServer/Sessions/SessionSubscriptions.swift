import PartitionSync
import SyncProtocol
import SyncStorage

/// A session's subscriptions as a value without I/O: which partition reads what next, which
/// follow their feed live, what each has delivered. The session keeps it in its state and
/// changes it under its lock; each method takes one happening (a subscribe, a page read or
/// written, a live page from the hub, a join refused) and answers what the session does
/// outside the lock (read a page, join the feed, wake the worker).
///
/// A subscription is either catching up (the worker reads pages after its last queued or
/// delivered position, the next while the previous is written) or live (the hub hands it each
/// commit). A live one whose page would overflow the queue drops its queued pages and
/// catches up again from the last position the client was actually sent.
struct SessionSubscriptions {
    enum Mode: Equatable {
        case catchingUp
        case live
    }

    struct Subscription {
        var generation: Int
        var mode: Mode
        /// Where the last page written to the socket ends (or where the client subscribed from;
        /// `nil`: a snapshot).
        var delivered: CursorPosition?
        /// Where the last catch-up page queued ends, while it is not written yet: the next
        /// catch-up read continues from it.
        var queued: CursorPosition?
        /// A catch-up read is in flight.
        var fetching = false
        /// What its read permission was decided on.
        var inputs: Set<PermissionInput>
        /// The client asked for progress and the catch-up's first page is not read yet: that
        /// page says how many objects the catch-up holds (`total`).
        var countsTotal = false
        /// The primary's WAL position when the catch-up started, which its pages must include
        /// when read from a replica (``ObjectStore/readTarget()``); `nil` before its first read,
        /// or without replicas in use.
        var readTarget: ReadTarget?
    }

    /// A catch-up read to make: the page from `start` (`nil`: a snapshot's first) of the
    /// subscription's generation.
    struct CatchUpRead: Equatable {
        var partition: Partition
        var generation: Int
        var start: CursorPosition?
        /// Count the objects the catch-up holds (the first page of a catch-up asked with progress).
        var countsTotal: Bool
        /// What its pages must include when read from a replica (`nil`: not known yet).
        var target: ReadTarget? = nil
    }

    /// What became of a page the hub handed to a live subscription.
    enum LiveOutcome: Equatable {
        /// Queued for the socket.
        case queued
        /// The subscription is not live there (ended, replaced, catching up).
        case refused
        /// The queue would overflow: the subscription dropped its pages and catches up again.
        case overflowed
    }

    /// Most pages of one catch-up queued or in the writer: the next is read while the
    /// previous are written.
    static let readAhead = 4

    private(set) var all: [Partition: Subscription] = [:]
    /// The partitions whose catch-up has been counted for progress: once each, so a client
    /// subscribing again and again cannot make the server count a large partition every time.
    private var counted: Set<Partition> = []
    private var nextGeneration = 1

    var count: Int { all.count }

    subscript(partition: Partition) -> Subscription? { all[partition] }

    // MARK: Subscribing

    /// Starts a subscription, or starts it again (a new generation, catching up from
    /// `start`, `nil` for a snapshot; the old one's queued pages are dropped). The
    /// subscription it replaced.
    mutating func subscribe(_ partition: Partition, from start: CursorPosition?, inputs: Set<PermissionInput>, progress: Bool, outbox: inout SessionOutbox)
        -> (generation: Int, replaced: Subscription?)
    {
        let replaced = all[partition]
        if replaced != nil { dropQueuedPages(of: partition, outbox: &outbox) }
        let generation = nextGeneration
        nextGeneration += 1
        all[partition] = Subscription(
            generation: generation, mode: .catchingUp, delivered: start, inputs: inputs, countsTotal: progress && !counted.contains(partition))
        return (generation, replaced)
    }

    /// Ends a subscription and drops its queued pages; the subscription ended, if any.
    mutating func end(_ partition: Partition, outbox: inout SessionOutbox) -> Subscription? {
        guard all[partition] != nil else { return nil }
        dropQueuedPages(of: partition, outbox: &outbox)
        return all.removeValue(forKey: partition)
    }

    /// Ends every subscription (the session is over); the partitions they read.
    mutating func endAll() -> [Partition] {
        defer { all.removeAll() }
        return Array(all.keys)
    }

    private mutating func dropQueuedPages(of partition: Partition, outbox: inout SessionOutbox) {
        _ = outbox.dropPages(of: partition)
        all[partition]?.queued = nil
    }

    // MARK: Catching up

    /// The next catch-up read, marked in flight: the first subscription catching up with no
    /// read in flight and room for a page (fewer than ``readAhead`` pending, and none pending
    /// unless the last one queued was a catch-up page); none while the queue's pages take
    /// half its byte limit or more.
    mutating func nextCatchUp(outbox: SessionOutbox) -> CatchUpRead? {
        guard outbox.pageBytes < outbox.byteLimit / 2 else { return nil }
        guard let (partition, subscription) = all.first(where: { partition, subscription in
            let pending = outbox.pendingPages(partition, generation: subscription.generation)
            return subscription.mode == .catchingUp && !subscription.fetching && pending < Self.readAhead
                && (pending == 0 || subscription.queued != nil)
        }) else { return nil }
        all[partition]?.fetching = true
        all[partition]?.countsTotal = false
        if subscription.countsTotal { counted.insert(partition) }
        return CatchUpRead(
            partition: partition, generation: subscription.generation, start: subscription.queued ?? subscription.delivered,
            countsTotal: subscription.countsTotal, target: subscription.readTarget)
    }

    /// A catch-up read failed: the subscription reads again later (and counts then, if this
    /// read was to).
    mutating func catchUpFailed(_ read: CatchUpRead) {
        all[read.partition]?.fetching = false
        guard read.countsTotal, all[read.partition]?.generation == read.generation else { return }
        all[read.partition]?.countsTotal = true
        counted.remove(read.partition)
    }

    /// A catch-up read returned its page: queued, unless the subscription ended or was
    /// replaced meanwhile, or the queue refuses it (closed, or full).
    /// `target` is what its pages must include when read from a replica, for the catch-up's next reads.
    mutating func catchUpRead(_ read: CatchUpRead, page: SessionOutbox.Page, target: ReadTarget? = nil, outbox: inout SessionOutbox) -> Bool {
        guard let subscription = all[read.partition], subscription.generation == read.generation else { return false }
        all[read.partition]?.fetching = false
        all[read.partition]?.readTarget = target
        return queue(page, outbox: &outbox)
    }

    /// A subscription whose page reached the head: live from here, before it joins its
    /// feed; `false` when it ended, was replaced or is reading meanwhile.
    mutating func becomeLive(_ partition: Partition, generation: Int) -> Bool {
        guard var subscription = all[partition], subscription.generation == generation, subscription.mode == .catchingUp,
            !subscription.fetching
        else { return false }
        subscription.mode = .live
        // A later catch-up (behind its feed, an overflow) starts from a new position.
        subscription.readTarget = nil
        all[partition] = subscription
        return true
    }

    /// The subscription's feed was ahead of it, or the feed ended: it catches up again.
    /// Whether the subscription is still that generation (the worker has work).
    mutating func catchUpAgain(_ partition: Partition, generation: Int) -> Bool {
        guard all[partition]?.generation == generation else { return false }
        all[partition]?.mode = .catchingUp
        return true
    }

    // MARK: Live pages and the socket

    /// A page from the hub for a live subscription.
    mutating func live(_ page: SessionOutbox.Page, outbox: inout SessionOutbox) -> LiveOutcome {
        guard let subscription = all[page.partition], subscription.generation == page.generation, subscription.mode == .live else {
            return .refused
        }
        if queue(page, outbox: &outbox) { return .queued }
        // Too much queued: the subscription stops following live and later catches up from
        // what the client has actually been sent.
        dropQueuedPages(of: page.partition, outbox: &outbox)
        all[page.partition]?.mode = .catchingUp
        return .overflowed
    }

    private mutating func queue(_ page: SessionOutbox.Page, outbox: inout SessionOutbox) -> Bool {
        guard outbox.queuePage(page) else { return false }
        if all[page.partition]?.mode == .catchingUp { all[page.partition]?.queued = page.end }
        return true
    }

    /// A page was written to the socket (or its write failed: the session then ends). Whether
    /// the worker must look for a catch-up read: this subscription's, or another's now that the
    /// queue's pages are under half its limit (a session following everything live starts no
    /// worker per page).
    mutating func written(_ page: SessionOutbox.Page, outbox: inout SessionOutbox) -> Bool {
        outbox.written(page)
        guard var subscription = all[page.partition], subscription.generation == page.generation else { return false }
        subscription.delivered = page.end
        if subscription.queued == page.end { subscription.queued = nil }
        all[page.partition] = subscription
        if subscription.mode == .catchingUp { return true }
        return outbox.pageBytes < outbox.byteLimit / 2 && all.values.contains { $0.mode == .catchingUp && !$0.fetching }
    }

    // MARK: Permission inputs

    /// The partitions whose read decisions depend on `input`.
    func reading(dependingOn input: PermissionInput) -> [Partition] {
        all.filter { $0.value.inputs.contains(input) }.map(\.key)
    }

    /// Records what a subscription's read permission now depends on; the inputs it depended
    /// on before (`nil` when it has ended).
    mutating func replaceInputs(of partition: Partition, with inputs: Set<PermissionInput>) -> Set<PermissionInput>? {
        guard let old = all[partition]?.inputs else { return nil }
        all[partition]?.inputs = inputs
        return old
    }
}
