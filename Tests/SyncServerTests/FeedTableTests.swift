import NIOCore
import PartitionSync
import SyncProtocol
import SyncStorage
import Testing

@testable import SyncServer

/// A subscriber that takes nothing: the tables only hold it.
final class StubSubscriber: FeedSubscriber {
    func deliver(partition: Partition, generation: Int, end: CursorPosition, bytes: ByteBuffer, objectCount: Int) -> Bool { true }
    func resync(partition: Partition, generation: Int) {}
    func permissionInputChanged(_ input: PermissionInput, changes: [ObjectChange]?) {}
    func permissionDecisions(dependingOn input: PermissionInput, canChangeWith changes: [ObjectChange]) -> Bool { true }
}

/// The hub's live feeds as a value: reads, local commits, joins, deliveries, without a
/// database, a session or a task.
@Suite("Feed table")
struct FeedTableTests {
    typealias Member = StubSubscriber
    typealias Table = FeedTable

    let room = partition("conversation=c1")
    let other = partition("conversation=c2")

    func page(_ partition: Partition, version: Int64, keys: [String] = ["m"], upToDate: Bool = true, reset: Bool = false) -> EncodedChangeBatch {
        EncodedChangeBatch(
            partition: partition,
            objects: keys.map { EncodedChangeBatch.Object(key: key("Message", $0), version: version, compactBody: Array("{}".utf8)) },
            cursor: Cursor(rawValue: "v\(version)"), upToDate: upToDate, reset: reset, version: version)
    }

    func at(_ version: Int64) -> CursorPosition { position(version) }

    /// A table whose feed of `room` has `member` (generation 1, at version 5) and has read a
    /// page up to `version` (empty when it is 5), not yet delivered.
    func feed(of member: Member, readTo version: Int64) -> Table {
        var table = Table()
        _ = table.join(member, partition: room, generation: 1, from: at(5))
        _ = table.readBegins(room)
        _ = table.read(room, page: page(room, version: version, keys: version == 5 ? [] : ["m"]), end: at(version))
        return table
    }

    @Test("the first subscriber makes the feed and one read; a second at the same place reads nothing more; one behind the feed is told so")
    func joins() {
        var table = Table()
        let (ann, bob, eve) = (Member(), Member(), Member())
        let first = table.join(ann, partition: room, generation: 1, from: at(5))
        #expect(first.result == .live && first.read)
        let second = table.join(bob, partition: room, generation: 1, from: at(5))
        #expect(second.result == .live && !second.read, "a read is running already")
        // The read comes back at version 7: a subscriber still at 6 must catch up alone first.
        _ = table.readBegins(room)
        _ = table.read(room, page: page(room, version: 7), end: at(7))
        let late = table.join(eve, partition: room, generation: 1, from: at(6))
        #expect(late.result == .behind && !late.read)
        #expect(table.counts == (1, 2))
    }

    @Test("a subscriber ahead of an idle feed makes it read once, since it may have missed notifications")
    func aheadOfTheFeed() {
        var table = Table()
        let (ann, bob) = (Member(), Member())
        _ = table.join(ann, partition: room, generation: 1, from: at(5))
        _ = table.readBegins(room)
        _ = table.read(room, page: page(room, version: 5, keys: []), end: at(5))
        let ahead = table.join(bob, partition: room, generation: 1, from: at(6))
        #expect(ahead.result == .live && ahead.read)
    }

    @Test("commits during a read start no second read but make the running one read again; an older version starts nothing")
    func oneReadAtATime() {
        var table = Table()
        _ = table.join(Member(), partition: room, generation: 1, from: at(5))
        let result1 = table.readBegins(room)
        #expect(result1 == at(5))
        let result2 = table.committed(room, version: 6)
        #expect(!result2, "the read in flight covers it")
        let outcome = table.read(room, page: page(room, version: 6), end: at(6))
        #expect(outcome.readAgain, "a commit arrived during the read")
        let result3 = table.readBegins(room)
        #expect(result3 == at(6))
        let last = table.read(room, page: page(room, version: 6, keys: []), end: at(6))
        #expect(!last.readAgain)
        let result4 = table.committed(room, version: 6)
        #expect(!result4, "not newer than the feed")
        let result5 = table.committed(room, version: 7)
        #expect(result5)
        let result6 = table.committed(other, version: 1)
        #expect(!result6, "no feed follows it")
    }

    @Test("a page that is not the last makes the feed read on")
    func pagedRead() {
        var table = Table()
        _ = table.join(Member(), partition: room, generation: 1, from: at(0))
        _ = table.readBegins(room)
        let result7 = table.read(room, page: page(room, version: 3, upToDate: false), end: position(3, after: key("Message", "m")))
        #expect(result7.readAgain)
    }

    @Test("a local commit right after the feed's position is queued from memory, and only the first queuer drains")
    func localCommits() {
        var table = Table()
        _ = table.join(Member(), partition: room, generation: 1, from: at(5))
        _ = table.readBegins(room)
        _ = table.read(room, page: page(room, version: 5, keys: []), end: at(5))
        // The read's page is still in the outbox (nobody drained yet): the next is queued behind it.
        var built = 0
        let result8 = table.committedLocally(room, version: 6, timeline: 0) { built += 1; return page(room, version: 6) }
        #expect(result8 == .queued(drain: false))
        #expect(built == 1)
        #expect(table.feeds[room]?.position == at(6))
        // A gap (version 8 after 6): the feed reads instead, and no page is built.
        let result9 = table.committedLocally(room, version: 8, timeline: 0) { built += 1; return page(room, version: 8) }
        #expect(result9 == .read)
        #expect(built == 1)
        // A partition without a feed: nothing, and no page built either.
        let result10 = table.committedLocally(other, version: 1, timeline: 0) { built += 1; return page(other, version: 1) }
        #expect(result10 == .none)
        #expect(built == 1)
    }

    @Test("after a failover, a local commit on another timeline makes the feed read, whatever its version: its position may be from a lost tail")
    func localCommitOnAnotherTimeline() {
        var table = Table()
        _ = table.join(Member(), partition: room, generation: 1, from: position(5, timeline: 1))
        _ = table.readBegins(room)
        _ = table.read(room, page: page(room, version: 5, keys: []), end: position(5, timeline: 1))
        // The new primary (timeline 2) lost version 5 and numbers its own commits 5, 6, ...: a
        // commit at 6 right after the feed's version is still not the next commit of its history.
        var built = 0
        let result = table.committedLocally(room, version: 6, timeline: 2) { built += 1; return page(room, version: 6) }
        #expect(result == .read)
        #expect(built == 0)
        #expect(table.feeds[room]?.position == position(5, timeline: 1), "nothing queued")
        // On the feed's own timeline, the same commit is queued from memory.
        var same = Table()
        _ = same.join(Member(), partition: room, generation: 1, from: position(5, timeline: 2))
        _ = same.readBegins(room)
        _ = same.read(room, page: page(room, version: 5, keys: []), end: position(5, timeline: 2))
        let queued = same.committedLocally(room, version: 6, timeline: 2) { page(room, version: 6) }
        #expect(queued == .queued(drain: false))
        #expect(same.feeds[room]?.position == position(6, timeline: 2))
    }

    @Test("a subscriber at the feed's version or ahead, on another timeline, is told to read again and the feed reads too")
    func joinOnAnotherTimeline() {
        var table = Table()
        let (ann, bob, eve) = (Member(), Member(), Member())
        _ = table.join(ann, partition: room, generation: 1, from: position(7, timeline: 2))
        _ = table.readBegins(room)
        _ = table.read(room, page: page(room, version: 7, keys: []), end: position(7, timeline: 2))
        let same = table.join(bob, partition: room, generation: 1, from: position(7, timeline: 1))
        #expect(same.result == .behind && same.read)
        _ = table.read(room, page: page(room, version: 7, keys: []), end: position(7, timeline: 2))
        let ahead = table.join(eve, partition: room, generation: 1, from: position(9, timeline: 1))
        #expect(ahead.result == .behind && ahead.read)
        #expect(table.counts == (1, 1), "only ann is a member")
        let fresh = table.join(eve, partition: room, generation: 2, from: position(0))
        #expect(fresh.result == .behind, "a subscriber at 0 is behind any feed that has read")
    }

    @Test("a read resyncs the members whose positions the partition's history does not have, whatever the feed's timeline; the others stay")
    func readChecksEveryMember() {
        var table = Table()
        let (ann, bob) = (Member(), Member())
        // The feed is at version 4 of timeline 2. Bob read on alone (before the failover) up to
        // 6 on the same timeline, and joined ahead of the feed.
        _ = table.join(ann, partition: room, generation: 1, from: position(4, timeline: 2))
        _ = table.join(bob, partition: room, generation: 1, from: position(6, timeline: 2))
        _ = table.readBegins(room)
        // The new primary has versions 1-4 of timeline 2 and wrote 5 and 6 on timeline 3: bob's
        // version 6 was lost, and the page (5-6) would skip him as not behind it.
        let history = PartitionHistory(timeline: 3, past: [.init(timeline: 2, through: 4)])
        let outcome = table.read(room, page: page(room, version: 6), end: position(6, timeline: 3), history: (6, history))
        #expect(outcome.resync.map { ObjectIdentifier($0.subscriber) } == [ObjectIdentifier(bob)])
        #expect(table.counts == (1, 1), "ann stays")
        // Without a history (a page whose history is not known), nobody is checked.
        var other = Table()
        _ = other.join(bob, partition: room, generation: 1, from: position(6, timeline: 2))
        _ = other.join(ann, partition: room, generation: 1, from: position(6, timeline: 2))
        let unchecked = other.read(room, page: page(room, version: 6), end: position(6, timeline: 2))
        #expect(unchecked.resync.isEmpty)
        // A member ahead of an older read on the partition's timeline waits for the feed.
        var racing = Table()
        _ = racing.join(ann, partition: room, generation: 1, from: position(5, timeline: 3))
        _ = racing.join(bob, partition: room, generation: 1, from: position(9, timeline: 3))
        _ = racing.readBegins(room)
        let older = racing.read(room, page: page(room, version: 6), end: position(6, timeline: 3), history: (6, history))
        #expect(older.resync.isEmpty, "bob's own read was newer than the feed's")
        #expect(racing.counts == (1, 2))
    }

    @Test("a delivered member takes the timeline of the page's end with its position")
    func deliveredTimeline() {
        var table = Table()
        let ann = Member()
        _ = table.join(ann, partition: room, generation: 1, from: position(4, timeline: 2))
        _ = table.readBegins(room)
        _ = table.read(room, page: page(room, version: 5), end: position(5, timeline: 3))
        let delivery = table.nextDelivery(room, feed: nil)!
        table.delivered(delivery, partition: room, outcomes: [(ObjectIdentifier(ann), 1, true)])
        #expect(table.feeds[room]?.members[ObjectIdentifier(ann)]?.timeline == 3)
    }

    @Test("a local commit while the feed reads makes the read go again rather than queue out of order")
    func localCommitDuringRead() {
        var table = Table()
        _ = table.join(Member(), partition: room, generation: 1, from: at(5))
        _ = table.readBegins(room)
        let result11 = table.committedLocally(room, version: 6, timeline: 0) { page(room, version: 6) }
        #expect(result11 == .none)
        #expect(table.feeds[room]?.outbox.isEmpty == true)
        let result12 = table.read(room, page: page(room, version: 5, keys: []), end: at(5))
        #expect(result12.readAgain)
    }

    @Test("pages go out in order to the members behind each page's end; one that refuses leaves; positions move to the end")
    func delivery() {
        var table = Table()
        let (ann, bob) = (Member(), Member())
        _ = table.join(ann, partition: room, generation: 1, from: at(5))
        _ = table.join(bob, partition: room, generation: 3, from: at(5))
        _ = table.readBegins(room)
        let outcome = table.read(room, page: page(room, version: 6), end: at(6))
        #expect(outcome.drain && !outcome.readAgain)
        let result13 = table.committedLocally(room, version: 7, timeline: 0) { page(room, version: 7) }
        #expect(result13 == .queued(drain: false))

        let first = table.nextDelivery(room, feed: nil)
        #expect(first?.end == at(6))
        #expect(Set(first?.members.map(\.id) ?? []) == [ObjectIdentifier(ann), ObjectIdentifier(bob)])
        table.delivered(first!, partition: room, outcomes: [(ObjectIdentifier(ann), 1, true), (ObjectIdentifier(bob), 3, false)])
        #expect(table.counts.members == 1, "bob refused the page: no longer live")

        let second = table.nextDelivery(room, feed: first?.feed)
        #expect(second?.end == at(7))
        #expect(second?.members.map(\.id) == [ObjectIdentifier(ann)])
        #expect(second?.members.first?.member.position == FeedPosition(at(6)))
        table.delivered(second!, partition: room, outcomes: [(ObjectIdentifier(ann), 1, true)])
        let result14 = table.nextDelivery(room, feed: first?.feed)
        #expect(result14 == nil)
        #expect(table.feeds[room]?.delivering == false)
        #expect(table.feeds[room]?.members[ObjectIdentifier(ann)]?.position == FeedPosition(at(7)))
    }

    @Test("the outcome of a member's earlier generation changes nothing for the subscription that replaced it")
    func staleGeneration() {
        let ann = Member()
        var table = feed(of: ann, readTo: 6)
        let delivery = table.nextDelivery(room, feed: nil)!
        // Ann subscribed again meanwhile (generation 2, at 6 already).
        table.leave(ObjectIdentifier(ann), partition: room)
        _ = table.join(ann, partition: room, generation: 2, from: at(6))
        table.delivered(delivery, partition: room, outcomes: [(ObjectIdentifier(ann), 1, false)])
        #expect(table.feeds[room]?.members[ObjectIdentifier(ann)]?.generation == 2, "the refusal was the old generation's")
    }

    @Test("a drainer of an ended feed stops rather than deliver the pages of the feed that replaced it")
    func endedFeed() {
        let ann = Member()
        var table = feed(of: ann, readTo: 6)
        let first = table.nextDelivery(room, feed: nil)!
        // The feed resets (its members catch up alone) and a new one starts.
        _ = table.committed(room, version: 9)
        let reset = table.read(room, page: page(room, version: 0, keys: [], reset: true), end: at(0))
        #expect(reset.resync.map { ObjectIdentifier($0.subscriber) } == [ObjectIdentifier(ann)])
        #expect(table.feeds[room] == nil)
        _ = table.join(ann, partition: room, generation: 2, from: at(9))
        table.delivered(first, partition: room, outcomes: [(ObjectIdentifier(ann), 1, false)])
        #expect(table.counts.members == 1)
        let result15 = table.nextDelivery(room, feed: first.feed)
        #expect(result15 == nil, "the old drainer stops")
        #expect(table.feeds[room]?.id != first.feed)
    }

    @Test("a feed without members goes once nothing uses it: at once when idle, after its read or its drain otherwise")
    func removal() {
        var table = Table()
        let ann = Member()
        _ = table.join(ann, partition: room, generation: 1, from: at(5))
        // Reading: the feed stays until the read looks again.
        table.leave(ObjectIdentifier(ann), partition: room)
        #expect(table.feeds[room] != nil)
        let result16 = table.readBegins(room)
        #expect(result16 == nil)
        #expect(table.feeds[room] == nil)

        _ = table.join(ann, partition: room, generation: 2, from: at(5))
        _ = table.readBegins(room)
        _ = table.read(room, page: page(room, version: 6), end: at(6))
        // Draining: the feed stays until its outbox is empty.
        table.leave(ObjectIdentifier(ann), partition: room)
        #expect(table.feeds[room] != nil)
        let delivery = table.nextDelivery(room, feed: nil)
        #expect(delivery?.members.isEmpty == true)
        let result17 = table.nextDelivery(room, feed: delivery?.feed)
        #expect(result17 == nil)
        #expect(table.feeds[room] == nil)
    }

    @Test("a reconnected listener makes every feed read: idle ones start, reading ones go again")
    func listenerReconnected() {
        var table = Table()
        _ = table.join(Member(), partition: room, generation: 1, from: at(5))
        _ = table.join(Member(), partition: other, generation: 1, from: at(5))
        _ = table.readBegins(room)
        _ = table.read(room, page: page(room, version: 5, keys: []), end: at(5))
        _ = table.readBegins(other)
        let result18 = table.listenerConnected()
        #expect(result18 == [room])
        let result19 = table.read(other, page: page(other, version: 5, keys: []), end: at(5))
        #expect(result19.readAgain)
        #expect(table.members(of: [room, other, partition("user=u1")]) == [room: 1, other: 1, partition("user=u1"): 0])
    }
}

/// Which sessions' permission decisions a commit concerns.
@Suite("Input watch table")
struct InputWatchTableTests {
    typealias Session = StubSubscriber
    typealias Table = InputWatchTable

    let membership = partition("user=u1")

    func created(_ id: String) -> ObjectChange {
        ObjectChange(key: key("Room", id), before: .absent, after: .live([:]), encodedBody: Array("{}".utf8))
    }

    @Test("each new version reaches the watchers once; a notification of an unknown version counts, the poll's first reading does not")
    func versions() {
        var table = Table()
        let ann = Session()
        let result20 = table.watch([.partition(membership)], versionsRead: [:], for: ann)
        #expect(result20.isEmpty)
        let result21 = table.committed(membership, version: 4, polled: true)
        #expect(result21.isEmpty, "the poll's first reading is the baseline")
        let result22 = table.committed(membership, version: 4, polled: false)
        #expect(result22.isEmpty, "not newer")
        let result23 = table.committed(membership, version: 5, polled: true)
        #expect(result23.count == 1)
        let result24 = table.committed(membership, version: 5, polled: false)
        #expect(result24.isEmpty, "seen already")

        var fresh = Table()
        _ = fresh.watch([.partition(membership)], versionsRead: [:], for: ann)
        let result25 = fresh.committed(membership, version: 1, polled: false)
        #expect(result25.count == 1)
        let result26 = fresh.committed(partition("user=u2"), version: 9, polled: false)
        #expect(result26.isEmpty, "not watched")
    }

    @Test("a commit screened at a generation: the watchers since then are late (the screen did not ask about them), the others not; an old version reaches none")
    func screenedGeneration() {
        var table = Table()
        let (ann, bob) = (Session(), Session())
        _ = table.watch([.partition(membership)], versionsRead: [:], for: ann)
        let screened = table.generation
        _ = table.watch([.partition(membership)], versionsRead: [:], for: bob)
        #expect(table.generation > screened)
        let result = table.committed(membership, version: 3, screenedAt: screened)
        #expect(result.count == 2)
        #expect(result.first { $0.subscriber === ann }?.late == false)
        #expect(result.first { $0.subscriber === bob }?.late == true)
        #expect(table.watchers(of: membership).count == 2)
        let again = table.committed(membership, version: 3, screenedAt: screened)
        #expect(again.isEmpty, "seen already")
    }

    @Test("a decision that read an input before watching it learns at once of a newer version already seen")
    func missedWhileDeciding() {
        var table = Table()
        let (ann, bob) = (Session(), Session())
        _ = table.watch([.partition(membership)], versionsRead: [:], for: ann)
        _ = table.committed(membership, version: 7, polled: false)
        let result27 = table.watch([.partition(membership)], versionsRead: [membership: 6], for: bob)
        #expect(result27 == [.partition(membership)])
        let result28 = table.watch([.partition(membership)], versionsRead: [membership: 7], for: bob)
        #expect(result28.isEmpty)
        // Unknown here: the version read becomes the baseline, so the next commit is news.
        let other = partition("user=u2")
        let result29 = table.watch([.partition(other)], versionsRead: [other: 3], for: bob)
        #expect(result29.isEmpty)
        let result30 = table.committed(other, version: 3, polled: true)
        #expect(result30.isEmpty)
        let result31 = table.committed(other, version: 4, polled: true)
        #expect(result31.count == 1)
    }

    @Test("the creation of an absent object reaches its watchers; a deletion or another object does not; unwatching ends it")
    func absentObjects() {
        var table = Table()
        let ann = Session()
        let input = PermissionInput.absentObject(key("Room", "r1"))
        _ = table.watch([input], versionsRead: [:], for: ann)
        #expect(table.created(by: [created("r1")]).map { $0.1.count } == [1])
        #expect(table.created(by: [created("r2")]).isEmpty)
        let deleted = ObjectChange(key: key("Room", "r1"), before: .absent, after: .deleted, encodedBody: nil)
        #expect(table.created(by: [deleted]).isEmpty)
        #expect(table.watchers(ofAbsent: key("Room", "r1")).count == 1)
        table.unwatch([input], for: ObjectIdentifier(ann))
        #expect(table.created(by: [created("r1")]).isEmpty)
        #expect(table.count == 0)
    }

    @Test("a session that ended without unwatching is not kept alive nor told")
    func weakWatchers() {
        var table = Table()
        var ann: Session? = StubSubscriber()
        _ = table.watch([.partition(membership)], versionsRead: [:], for: ann!)
        weak let gone = ann
        ann = nil
        #expect(gone == nil)
        let result32 = table.committed(membership, version: 1, polled: false)
        #expect(result32.isEmpty)
        #expect(table.everyPartitionWatch.isEmpty)
    }

    @Test("unwatching the last watcher of a partition forgets its version: watching again starts afresh")
    func forgetting() {
        var table = Table()
        let ann = Session()
        _ = table.watch([.partition(membership)], versionsRead: [:], for: ann)
        _ = table.committed(membership, version: 5, polled: false)
        table.unwatch([.partition(membership)], for: ObjectIdentifier(ann))
        #expect(table.count == 0)
        _ = table.watch([.partition(membership)], versionsRead: [membership: 2], for: ann)
        let result33 = table.committed(membership, version: 2, polled: true)
        #expect(result33.isEmpty, "version 5 was forgotten")
    }
}
