import DequeModule
import NIOCore
import NIOWebSocket
import PartitionSync
import SyncProtocol
import SyncStorage

/// What a session has yet to send, in order: replies, pages of its subscriptions and, last, a
/// close frame; and how many pages of each subscription are queued or being written.
///
/// A value without locks or I/O: the session keeps it in its locked state and acts on what its
/// methods return, so the rules of a session's output are tested without a socket or a
/// database (`SessionOutboxTests`):
/// - a page counts against the subscription that queued it, by generation: a subscription
///   started again begins with no page pending, whatever its former one left queued or in the
///   writer (a count carried over never went down again, and the new subscription waited
///   forever for it);
/// - an upload batch is one event from the outbox's point of view: while it is applied
///   (``uploadBegan(to:)``) the pages of its partition wait, and its answers arrive together
///   (``uploadAnswered(_:partition:commit:)``), placed before the first queued page of the
///   partition that reaches its commit, so a client hears of its upload before it sees the
///   upload's effects, whether the commit's pages reached the queue before the answers or
///   after;
/// - the pages' bytes are bounded (an empty queue always takes one page, so a page larger than
///   the bound still goes), replies are bounded, and nothing is queued after the close frame.
struct SessionOutbox {
    /// One page of changes, as the bytes of its `changes` message (shared by every session it
    /// goes to).
    struct Page {
        var partition: Partition
        var generation: Int
        /// Where the page ends in the partition's history (its message carries the same place
        /// as a cursor).
        var end: CursorPosition
        var bytes: ByteBuffer
    }

    enum Item {
        case reply(String)
        case page(Page)
        case close(WebSocketErrorCode, String)
    }

    /// How a reply was taken.
    enum ReplyOutcome: Equatable {
        case queued
        /// The close frame is queued already: the reply is dropped.
        case closed
        /// The reply limit is reached: the client does not read its messages.
        case overflow
    }

    /// A subscription of one generation.
    private struct Subscription: Hashable {
        var partition: Partition
        var generation: Int
    }

    /// Most bytes of pages queued (an empty queue takes one page of any size).
    let byteLimit: Int
    /// Most replies queued.
    let replyLimit: Int
    private(set) var items: Deque<Item> = []
    /// Bytes of the pages in ``items``.
    private(set) var pageBytes = 0
    /// Replies in ``items``.
    private(set) var replies = 0
    /// The close frame is queued (or the session ends without one): nothing more is.
    private(set) var isClosed = false
    /// The partition an upload batch is being applied to: its pages wait until the batch is
    /// answered.
    private(set) var applying: Partition?
    /// Pages queued or being written, per subscription generation; absent when none.
    private var pending: [Subscription: Int] = [:]

    init(byteLimit: Int, replyLimit: Int) {
        self.byteLimit = byteLimit
        self.replyLimit = replyLimit
    }

    /// Pages of the subscription queued or being written.
    func pendingPages(_ partition: Partition, generation: Int) -> Int {
        pending[Subscription(partition: partition, generation: generation)] ?? 0
    }

    /// Queues a reply at the end.
    mutating func queueReply(_ text: String) -> ReplyOutcome {
        guard !isClosed else { return .closed }
        guard replies < replyLimit else { return .overflow }
        items.append(.reply(text))
        replies += 1
        return .queued
    }

    /// An upload batch to `partition` is being applied: the partition's pages wait for its
    /// answers (its commit reaches this instance's feeds, and so this queue, before the
    /// uploader has its outcome).
    mutating func uploadBegan(to partition: Partition) {
        applying = partition
    }

    /// The upload batch was answered: its answers, in order, go before the first queued page
    /// of its partition that reaches `commit` (the version the batch committed; `nil` when it
    /// committed nothing new), or at the end; the partition's pages flow again. The answers
    /// are taken all or none.
    mutating func uploadAnswered(_ answers: [String], partition: Partition, commit: Int64?) -> ReplyOutcome {
        if applying == partition { applying = nil }
        guard !isClosed else { return .closed }
        guard replies + answers.count <= replyLimit else { return .overflow }
        let index = commit.flatMap { commit in
            items.firstIndex { item in
                guard case .page(let page) = item else { return false }
                return page.partition == partition && page.end.version >= commit
            }
        }
        items.insert(contentsOf: answers.lazy.map(Item.reply), at: index ?? items.endIndex)
        replies += answers.count
        return .queued
    }

    /// Queues a page; `false` when the queue is closed, or the page would take the pages'
    /// bytes over the limit (an empty queue takes any page).
    mutating func queuePage(_ page: Page) -> Bool {
        guard !isClosed else { return false }
        if pageBytes > 0, pageBytes + page.bytes.readableBytes > byteLimit { return false }
        items.append(.page(page))
        pageBytes += page.bytes.readableBytes
        pending[Subscription(partition: page.partition, generation: page.generation), default: 0] += 1
        return true
    }

    /// Queues the close frame after everything queued; `false` when it is queued already.
    mutating func queueClose(_ code: WebSocketErrorCode, _ reason: String) -> Bool {
        guard !isClosed else { return false }
        isClosed = true
        items.append(.close(code, reason))
        return true
    }

    /// Queues nothing more, and sends nothing more: the session ended without a close frame
    /// of its own.
    mutating func end() {
        isClosed = true
        items.removeAll()
        pending.removeAll()
        pageBytes = 0
        replies = 0
    }

    /// The next item for the writer; `nil` when there is none, or the next is a page held
    /// back. A page stays pending until ``written(_:)``.
    mutating func next() -> Item? {
        if case .page(let page)? = items.first, page.partition == applying { return nil }
        guard let item = items.popFirst() else { return nil }
        switch item {
        case .reply: replies -= 1
        case .page(let page): pageBytes -= page.bytes.readableBytes
        case .close: break
        }
        return item
    }

    /// A page taken by ``next()`` was written (or its write ended the session).
    mutating func written(_ page: Page) {
        release(Subscription(partition: page.partition, generation: page.generation), count: 1)
    }

    /// Removes the queued pages of a partition, of every generation; a page being written
    /// stays pending until it is written. Returns how many were removed.
    @discardableResult
    mutating func dropPages(of partition: Partition) -> Int {
        var dropped: [Subscription: Int] = [:]
        items.removeAll { item in
            guard case .page(let page) = item, page.partition == partition else { return false }
            pageBytes -= page.bytes.readableBytes
            dropped[Subscription(partition: page.partition, generation: page.generation), default: 0] += 1
            return true
        }
        for (subscription, count) in dropped { release(subscription, count: count) }
        return dropped.values.reduce(0, +)
    }

    private mutating func release(_ subscription: Subscription, count: Int) {
        guard let current = pending[subscription] else { return }
        if current > count {
            pending[subscription] = current - count
        } else {
            pending.removeValue(forKey: subscription)
        }
    }
}
