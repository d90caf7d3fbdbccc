import DequeModule
import NIOCore
import NIOWebSocket
import PartitionSync
import SyncProtocol

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
/// - an upload's answer goes before the queued pages of its partition that reach its commit
///   or later, compared by their positions, so a client hears of its upload before it sees the
///   upload's effects;
/// - the pages' bytes are bounded (an empty queue always takes one page, so a page larger than
///   the bound still goes), replies are bounded, and nothing is queued after the close frame;
/// - pages of a partition an upload is being applied to are held back until it is answered.
struct SessionOutbox {
    /// One page of changes, as the bytes of its `changes` message (shared by every session it
    /// goes to).
    struct Page {
        var partition: Partition
        var generation: Int
        var cursor: Cursor
        /// Where the page ends in the partition's history.
        var end: FeedPosition
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
    /// While set, the pages of this partition wait (an upload to it is being applied: its
    /// answers go first).
    var heldBack: Partition?
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

    /// Queues a reply at the end; with `ahead`, before the first queued page of that partition
    /// that reaches that version or later.
    mutating func queueReply(_ text: String, ahead: (partition: Partition, version: Int64)? = nil) -> ReplyOutcome {
        guard !isClosed else { return .closed }
        guard replies < replyLimit else { return .overflow }
        let index = ahead.flatMap { ahead in
            items.firstIndex { item in
                guard case .page(let page) = item else { return false }
                return page.partition == ahead.partition && page.end.version >= ahead.version
            }
        }
        if let index {
            items.insert(.reply(text), at: index)
        } else {
            items.append(.reply(text))
        }
        replies += 1
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
        if case .page(let page)? = items.first, page.partition == heldBack { return nil }
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
