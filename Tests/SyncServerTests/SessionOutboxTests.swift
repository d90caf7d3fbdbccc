import NIOCore
import NIOWebSocket
import PartitionSync
import SyncProtocol
import SyncStorage
import Testing

@testable import SyncServer

/// The session's output as a value, without a socket or a database.
@Suite("Session outbox")
struct SessionOutboxTests {
    let wiki = partition("wiki=w1")
    let user = partition("user=u1")

    @Test("a subscription started again while its page is queued begins with no page pending (the count carried over never went down, and the new subscription never read again)")
    func resubscribeWhileQueued() {
        let outbox = Outbox(byteLimit: 1_000, replyLimit: 10)
        #expect(outbox.queuePage(outboxPage(wiki, generation: 2, version: 6)))
        #expect(outbox.pendingPages(wiki, generation: 2) == 1)
        // The client subscribes again: the queued page goes, and the new generation owes nothing.
        #expect(outbox.dropPages(of: wiki) == 1)
        #expect(outbox.pendingPages(wiki, generation: 2) == 0)
        #expect(outbox.pendingPages(wiki, generation: 4) == 0)
        #expect(outbox.pageBytes == 0)
        #expect(outbox.next() == nil)
    }

    @Test("a page of a former generation in the writer stays pending for that generation only, and is released once written")
    func resubscribeWhileWriting() throws {
        let outbox = Outbox(byteLimit: 1_000, replyLimit: 10)
        #expect(outbox.queuePage(outboxPage(wiki, generation: 2, version: 6)))
        guard case .page(let writing)? = outbox.next() else { Issue.record("no page to write"); return }
        #expect(outbox.dropPages(of: wiki) == 0)
        #expect(outbox.queuePage(outboxPage(wiki, generation: 4, version: 6)))
        #expect(outbox.pendingPages(wiki, generation: 2) == 1)
        #expect(outbox.pendingPages(wiki, generation: 4) == 1)
        outbox.written(writing)
        #expect(outbox.pendingPages(wiki, generation: 2) == 0)
        #expect(outbox.pendingPages(wiki, generation: 4) == 1)
    }

    @Test("an upload batch's answers go, in order, before the queued pages of its partition that reach its commit, after the others")
    func answerAhead() {
        let outbox = Outbox(byteLimit: 1_000, replyLimit: 10)
        outbox.uploadBegan(to: wiki)
        #expect(outbox.queuePage(outboxPage(wiki, generation: 1, version: 5)))
        #expect(outbox.queuePage(outboxPage(user, generation: 1, version: 9)))
        #expect(outbox.queuePage(outboxPage(wiki, generation: 1, version: 7)))
        #expect(outbox.uploadAnswered(["ack1", "ack2"], partition: wiki, commit: 7) == .queued)
        #expect(outbox.queueReply("later") == .queued)
        let order = drained(outbox)
        #expect(order == ["wiki@5", "user@9", "ack1", "ack2", "wiki@7", "later"])
    }

    @Test("answers whose commit's pages are not queued yet go at the end, before those pages arrive")
    func answerBeforeLatePages() {
        let outbox = Outbox(byteLimit: 1_000, replyLimit: 10)
        outbox.uploadBegan(to: wiki)
        #expect(outbox.queuePage(outboxPage(wiki, generation: 1, version: 5)))
        #expect(outbox.uploadAnswered(["ack"], partition: wiki, commit: 6) == .queued)
        #expect(outbox.queuePage(outboxPage(wiki, generation: 1, version: 6)))
        #expect(drained(outbox) == ["wiki@5", "ack", "wiki@6"])
    }

    @Test("a batch's answers are taken all or none: a batch that would pass the reply limit closes the session rather than lose an answer")
    func answersAllOrNone() {
        let outbox = Outbox(byteLimit: 1_000, replyLimit: 3)
        #expect(outbox.queueReply("a") == .queued)
        outbox.uploadBegan(to: wiki)
        #expect(outbox.uploadAnswered(["ack1", "ack2", "ack3"], partition: wiki, commit: 2) == .overflow)
        #expect(outbox.applying == nil, "the partition's pages flow again")
        #expect(drained(outbox) == ["a"])
    }

    @Test("pages are bounded in bytes, but an empty queue takes a page of any size")
    func byteLimit() {
        let outbox = Outbox(byteLimit: 100, replyLimit: 10)
        #expect(outbox.queuePage(outboxPage(wiki, generation: 1, version: 1, bytes: 500)))
        #expect(!outbox.queuePage(outboxPage(wiki, generation: 1, version: 2, bytes: 1)))
        _ = outbox.next()
        #expect(outbox.queuePage(outboxPage(wiki, generation: 1, version: 2, bytes: 60)))
        #expect(outbox.queuePage(outboxPage(wiki, generation: 1, version: 3, bytes: 40)))
        #expect(!outbox.queuePage(outboxPage(wiki, generation: 1, version: 4, bytes: 1)))
        #expect(outbox.pageBytes == 100)
    }

    @Test("replies are bounded, and nothing is queued after the close frame")
    func repliesAndClose() {
        let outbox = Outbox(byteLimit: 100, replyLimit: 2)
        #expect(outbox.queueReply("a") == .queued)
        #expect(outbox.queueReply("b") == .queued)
        #expect(outbox.queueReply("c") == .overflow)
        #expect(outbox.queueClose(.goingAway, "bye"))
        #expect(!outbox.queueClose(.goingAway, "again"))
        #expect(outbox.queueReply("d") == .closed)
        #expect(!outbox.queuePage(outboxPage(wiki, generation: 1, version: 1)))
        #expect(drained(outbox) == ["a", "b", "close"])
    }

    @Test("the pages of a partition being uploaded to wait until the upload is answered; other items pass only up to them")
    func heldBack() {
        let outbox = Outbox(byteLimit: 1_000, replyLimit: 10)
        outbox.uploadBegan(to: wiki)
        #expect(outbox.queueReply("hello") == .queued)
        #expect(outbox.queuePage(outboxPage(wiki, generation: 1, version: 3)))
        #expect(outbox.queuePage(outboxPage(user, generation: 1, version: 8)))
        #expect(drained(outbox) == ["hello"])
        #expect(outbox.next() == nil)
        #expect(outbox.uploadAnswered(["ack"], partition: wiki, commit: 3) == .queued)
        #expect(outbox.queuePage(outboxPage(wiki, generation: 1, version: 4)))
        #expect(drained(outbox) == ["ack", "wiki@3", "user@8", "wiki@4"])
    }

    /// Takes every item the writer may take now, as short names.
    func drained(_ outbox: Outbox) -> [String] {
        var names: [String] = []
        while let item = outbox.next() {
            switch item {
            case .reply(let text): names.append(text)
            case .page(let page):
                names.append("\(page.partition == wiki ? "wiki" : "user")@\(page.end.version)")
                outbox.written(page)
            case .close: names.append("close")
            }
        }
        return names
    }
}

/// The outbox under test behind a reference, so `#expect` can call what changes it.
final class Outbox {
    private var value: SessionOutbox

    init(byteLimit: Int, replyLimit: Int) {
        value = SessionOutbox(byteLimit: byteLimit, replyLimit: replyLimit)
    }

    var pageBytes: Int { value.pageBytes }
    var applying: Partition? { value.applying }
    func pendingPages(_ partition: Partition, generation: Int) -> Int { value.pendingPages(partition, generation: generation) }
    func queuePage(_ page: SessionOutbox.Page) -> Bool { value.queuePage(page) }
    func queueReply(_ text: String) -> SessionOutbox.ReplyOutcome { value.queueReply(text) }
    func uploadBegan(to partition: Partition) { value.uploadBegan(to: partition) }
    func uploadAnswered(_ answers: [String], partition: Partition, commit: Int64?) -> SessionOutbox.ReplyOutcome {
        value.uploadAnswered(answers, partition: partition, commit: commit)
    }
    func queueClose(_ code: WebSocketErrorCode, _ reason: String) -> Bool { value.queueClose(code, reason) }
    func dropPages(of partition: Partition) -> Int { value.dropPages(of: partition) }
    func next() -> SessionOutbox.Item? { value.next() }
    func written(_ page: SessionOutbox.Page) { value.written(page) }
}
