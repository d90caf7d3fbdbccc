import NIOCore
import PartitionSync
import SyncProtocol
import SyncStorage
import Testing

@testable import SyncServer

/// A session's subscriptions as a value: catch-up scheduling, the move to live and back,
/// overflow, and what the writer's progress wakes, without a socket, a database or a task.
@Suite("Session subscriptions")
struct SessionSubscriptionsTests {
    let wiki = partition("wiki=w1")
    let user = partition("user=u1")

    @Test("a new subscription catches up from the client's position; its next read continues from the last page queued, not the last written")
    func catchUpPosition() throws {
        var outbox = SessionOutbox(byteLimit: 1_000, replyLimit: 10)
        var subscriptions = SessionSubscriptions()
        let (generation, replaced) = subscriptions.subscribe(wiki, from: position(3), inputs: [], progress: false, outbox: &outbox)
        #expect(replaced == nil)
        let result1 = subscriptions.nextCatchUp(outbox: outbox)
        let first = try #require(result1)
        #expect(first == .init(partition: wiki, generation: generation, start: position(3), countsTotal: false))
        let result2 = subscriptions.nextCatchUp(outbox: outbox)
        #expect(result2 == nil, "one read in flight per subscription")
        let result3 = subscriptions.catchUpRead(first, page: outboxPage(wiki, generation: generation, version: 5), outbox: &outbox)
        #expect(result3)
        let result4 = subscriptions.nextCatchUp(outbox: outbox)
        let second = try #require(result4)
        #expect(second.start == position(5), "read ahead of the writer")
    }

    @Test("a catch-up's pages share the replica target its first read took; a catch-up after the subscription went live takes a new one")
    func replicaTarget() throws {
        var outbox = SessionOutbox(byteLimit: 1_000, replyLimit: 10)
        var subscriptions = SessionSubscriptions()
        let (generation, _) = subscriptions.subscribe(wiki, from: nil, inputs: [], progress: false, outbox: &outbox)
        let read1 = subscriptions.nextCatchUp(outbox: outbox)
        let first = try #require(read1)
        #expect(first.target == nil, "the first read asks the primary for its position")
        let queued1 = subscriptions.catchUpRead(first, page: outboxPage(wiki, generation: generation, version: 2), target: ReadTarget(position: 700, timeline: 1), outbox: &outbox)
        #expect(queued1)
        let read2 = subscriptions.nextCatchUp(outbox: outbox)
        let second = try #require(read2)
        #expect(second.target == ReadTarget(position: 700, timeline: 1), "not a newer position for each page")
        let queued2 = subscriptions.catchUpRead(second, page: outboxPage(wiki, generation: generation, version: 3), target: ReadTarget(position: 700, timeline: 1), outbox: &outbox)
        #expect(queued2)
        while case .page(let page)? = outbox.next() { _ = subscriptions.written(page, outbox: &outbox) }
        let live = subscriptions.becomeLive(wiki, generation: generation)
        #expect(live)
        let behind = subscriptions.catchUpAgain(wiki, generation: generation)
        #expect(behind)
        let read3 = subscriptions.nextCatchUp(outbox: outbox)
        let again = try #require(read3)
        #expect(again.start == position(3))
        #expect(again.target == nil, "behind its feed: the client may have seen commits after 700")
        // A new subscription of the partition starts without one too.
        subscriptions.catchUpFailed(again)
        _ = subscriptions.subscribe(wiki, from: position(3), inputs: [], progress: false, outbox: &outbox)
        let read4 = subscriptions.nextCatchUp(outbox: outbox)
        #expect(read4 != nil && read4?.target == nil)
    }

    @Test("at most four pages of one catch-up are pending; a written page lets the next read go")
    func readAhead() throws {
        var outbox = SessionOutbox(byteLimit: 1_000, replyLimit: 10)
        var subscriptions = SessionSubscriptions()
        let (generation, _) = subscriptions.subscribe(wiki, from: nil, inputs: [], progress: false, outbox: &outbox)
        for version in 1...4 {
            let result5 = subscriptions.nextCatchUp(outbox: outbox)
            let read = try #require(result5)
            let result6 = subscriptions.catchUpRead(read, page: outboxPage(wiki, generation: generation, version: Int64(version)), outbox: &outbox)
            #expect(result6)
        }
        let result7 = subscriptions.nextCatchUp(outbox: outbox)
        #expect(result7 == nil)
        guard case .page(let first)? = outbox.next() else { Issue.record("no page to write"); return }
        let result8 = subscriptions.written(first, outbox: &outbox)
        #expect(result8, "a catching-up subscription wakes the worker")
        #expect(subscriptions[wiki]?.delivered == position(1))
        let result9 = subscriptions.nextCatchUp(outbox: outbox)
        #expect(result9?.start == position(4))
    }

    @Test("no catch-up read while the queue's pages take half its byte limit")
    func byteLimit() throws {
        var outbox = SessionOutbox(byteLimit: 100, replyLimit: 10)
        var subscriptions = SessionSubscriptions()
        let (generation, _) = subscriptions.subscribe(wiki, from: nil, inputs: [], progress: false, outbox: &outbox)
        _ = subscriptions.subscribe(user, from: nil, inputs: [], progress: false, outbox: &outbox)
        let result10 = subscriptions.nextCatchUp(outbox: outbox)
        let read = try #require(result10)
        let result11 = subscriptions.catchUpRead(read, page: outboxPage(read.partition, generation: read.generation, version: 1, bytes: 50), outbox: &outbox)
        #expect(result11)
        let result12 = subscriptions.nextCatchUp(outbox: outbox)
        #expect(result12 == nil, "50 of 100 bytes queued")
        #expect(subscriptions[read.partition == wiki ? user : wiki]?.fetching == false)
        _ = generation
    }

    @Test("a page read for a subscription replaced or ended meanwhile is not queued")
    func staleRead() throws {
        var outbox = SessionOutbox(byteLimit: 1_000, replyLimit: 10)
        var subscriptions = SessionSubscriptions()
        _ = subscriptions.subscribe(wiki, from: nil, inputs: [], progress: false, outbox: &outbox)
        let result13 = subscriptions.nextCatchUp(outbox: outbox)
        let read = try #require(result13)
        let (again, replaced) = subscriptions.subscribe(wiki, from: position(9), inputs: [], progress: false, outbox: &outbox)
        #expect(replaced?.generation == read.generation && again > read.generation)
        let result14 = subscriptions.catchUpRead(read, page: outboxPage(wiki, generation: read.generation, version: 5), outbox: &outbox)
        #expect(!result14)
        #expect(outbox.pageBytes == 0)
        let result15 = subscriptions.nextCatchUp(outbox: outbox)
        #expect(result15?.start == position(9), "the new generation reads on its own")
        _ = subscriptions.end(wiki, outbox: &outbox)
        let result16 = subscriptions.nextCatchUp(outbox: outbox)
        #expect(result16 == nil)
    }

    @Test("progress is counted once per partition: a subscription asked again does not count again, unless the counting read failed")
    func progressCountedOnce() throws {
        var outbox = SessionOutbox(byteLimit: 1_000, replyLimit: 10)
        var subscriptions = SessionSubscriptions()
        _ = subscriptions.subscribe(wiki, from: nil, inputs: [], progress: true, outbox: &outbox)
        let result17 = subscriptions.nextCatchUp(outbox: outbox)
        let failed = try #require(result17)
        #expect(failed.countsTotal)
        subscriptions.catchUpFailed(failed)
        let result18 = subscriptions.nextCatchUp(outbox: outbox)
        let retried = try #require(result18)
        #expect(retried.countsTotal, "the failed read did not count")
        let result19 = subscriptions.catchUpRead(retried, page: outboxPage(wiki, generation: retried.generation, version: 1), outbox: &outbox)
        #expect(result19)
        _ = subscriptions.subscribe(wiki, from: nil, inputs: [], progress: true, outbox: &outbox)
        let result20 = subscriptions.nextCatchUp(outbox: outbox)
        #expect(result20?.countsTotal == false, "counted already")
    }

    @Test("a subscription goes live only when caught up and not reading; a live page is queued; a feed ahead sends it back to catching up")
    func liveAndBack() throws {
        var outbox = SessionOutbox(byteLimit: 1_000, replyLimit: 10)
        var subscriptions = SessionSubscriptions()
        let (generation, _) = subscriptions.subscribe(wiki, from: nil, inputs: [], progress: false, outbox: &outbox)
        let result21 = subscriptions.live(outboxPage(wiki, generation: generation, version: 1), outbox: &outbox)
        #expect(result21 == .refused, "still catching up")
        let result22 = subscriptions.nextCatchUp(outbox: outbox)
        let read = try #require(result22)
        let result23 = subscriptions.becomeLive(wiki, generation: generation)
        #expect(!result23, "a read is in flight")
        let result24 = subscriptions.catchUpRead(read, page: outboxPage(wiki, generation: generation, version: 1), outbox: &outbox)
        #expect(result24)
        let result25 = subscriptions.becomeLive(wiki, generation: generation - 1)
        #expect(!result25, "another generation")
        let result26 = subscriptions.becomeLive(wiki, generation: generation)
        #expect(result26)
        let result27 = subscriptions.nextCatchUp(outbox: outbox)
        #expect(result27 == nil, "live subscriptions are not read")
        let result28 = subscriptions.live(outboxPage(wiki, generation: generation, version: 2), outbox: &outbox)
        #expect(result28 == .queued)
        #expect(subscriptions[wiki]?.queued == position(1), "a live page is not a catch-up position")
        let result29 = subscriptions.catchUpAgain(wiki, generation: generation)
        #expect(result29)
        let result30 = subscriptions.catchUpAgain(wiki, generation: generation + 1)
        #expect(!result30)
        #expect(subscriptions[wiki]?.mode == .catchingUp)
    }

    @Test("a live page that would overflow the queue drops the subscription's pages and sends it back to catch up from what the client was sent")
    func overflow() throws {
        var outbox = SessionOutbox(byteLimit: 100, replyLimit: 10)
        var subscriptions = SessionSubscriptions()
        let (generation, _) = subscriptions.subscribe(wiki, from: position(0), inputs: [], progress: false, outbox: &outbox)
        let result31 = subscriptions.nextCatchUp(outbox: outbox)
        let read = try #require(result31)
        let result32 = subscriptions.catchUpRead(read, page: outboxPage(wiki, generation: generation, version: 1), outbox: &outbox)
        #expect(result32)
        guard case .page(let written)? = outbox.next() else { Issue.record("no page to write"); return }
        _ = subscriptions.written(written, outbox: &outbox)
        let result33 = subscriptions.becomeLive(wiki, generation: generation)
        #expect(result33)
        let result34 = subscriptions.live(outboxPage(wiki, generation: generation, version: 2, bytes: 60), outbox: &outbox)
        #expect(result34 == .queued)
        let result35 = subscriptions.live(outboxPage(wiki, generation: generation, version: 3, bytes: 60), outbox: &outbox)
        #expect(result35 == .overflowed)
        #expect(outbox.pageBytes == 0, "its queued pages were dropped")
        let result36 = subscriptions.nextCatchUp(outbox: outbox)
        #expect(result36?.start == position(1), "from the last page written")
    }

    @Test("a written live page wakes the worker only when another subscription waits to catch up and the queue is under half full")
    func writtenWakes() throws {
        var outbox = SessionOutbox(byteLimit: 100, replyLimit: 10)
        var subscriptions = SessionSubscriptions()
        let (generation, _) = subscriptions.subscribe(wiki, from: nil, inputs: [], progress: false, outbox: &outbox)
        let result37 = subscriptions.nextCatchUp(outbox: outbox)
        let read = try #require(result37)
        _ = subscriptions.catchUpRead(read, page: outboxPage(wiki, generation: generation, version: 1), outbox: &outbox)
        guard case .page(let first)? = outbox.next() else { Issue.record("no page to write"); return }
        _ = subscriptions.written(first, outbox: &outbox)
        let result38 = subscriptions.becomeLive(wiki, generation: generation)
        #expect(result38)
        let result39 = subscriptions.live(outboxPage(wiki, generation: generation, version: 2), outbox: &outbox)
        #expect(result39 == .queued)
        guard case .page(let live)? = outbox.next() else { Issue.record("no page to write"); return }
        let result40 = subscriptions.written(live, outbox: &outbox)
        #expect(!result40, "nothing to catch up")

        _ = subscriptions.subscribe(user, from: nil, inputs: [], progress: false, outbox: &outbox)
        for version in 3...5 {
            let result41 = subscriptions.live(outboxPage(wiki, generation: generation, version: Int64(version), bytes: 30), outbox: &outbox)
            #expect(result41 == .queued)
        }
        guard case .page(let third)? = outbox.next() else { Issue.record("no page to write"); return }
        let result42 = subscriptions.written(third, outbox: &outbox)
        #expect(!result42, "60 of 100 bytes still queued: the catch-up waits")
        guard case .page(let fourth)? = outbox.next() else { Issue.record("no page to write"); return }
        let result43 = subscriptions.written(fourth, outbox: &outbox)
        #expect(result43, "30 of 100 bytes: the waiting catch-up may read")
    }

    @Test("the decisions depending on an input, and replacing a subscription's inputs")
    func inputs() {
        var outbox = SessionOutbox(byteLimit: 100, replyLimit: 10)
        var subscriptions = SessionSubscriptions()
        let membership = PermissionInput.partition(partition("user=u2"))
        _ = subscriptions.subscribe(wiki, from: nil, inputs: [membership], progress: false, outbox: &outbox)
        _ = subscriptions.subscribe(user, from: nil, inputs: [], progress: false, outbox: &outbox)
        #expect(subscriptions.reading(dependingOn: membership) == [wiki])
        let result44 = subscriptions.replaceInputs(of: wiki, with: [])
        #expect(result44 == [membership])
        #expect(subscriptions.reading(dependingOn: membership).isEmpty)
        let result45 = subscriptions.replaceInputs(of: partition("wiki=gone"), with: [])
        #expect(result45 == nil)
        let result46 = subscriptions.endAll()
        #expect(Set(result46) == [wiki, user])
        #expect(subscriptions.count == 0)
    }
}
