import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// An asynchronous failover that lost the last commits (TestDatabase+Failover): the new primary
/// numbers its own commits with the versions the lost ones had. A cursor from the lost tail is
/// answered with a reset, never continued as if its commits were these; a cursor from before
/// continues; a trigger's lease and position do not carry the lost history over.
@Suite("A failover's lost tail", .timeLimit(.minutes(30)))
struct LostTailTests {
    let room = partition("conversation=c-1")

    /// Applies the pages after `cursor` until one is up to date; whether one was a reset.
    func sync(_ copy: inout PartitionCopy, _ store: ObjectStore) async throws -> Bool {
        var reset = false
        repeat {
            let batch = try await store.changes(in: room, after: copy.cursor, limit: 2)
            reset = reset || batch.reset
            copy.apply(batch)
        } while !copy.upToDate
        return reset
    }

    func put(_ store: ObjectStore, _ id: String, _ text: String) async throws -> UploadResult {
        try await store.upload(Upload(partition: room, operations: [.put(key("ChatMessage", id), body: ["text": .string(text)])], principal: "u1", requestId: "put-\(id)-\(text)"))
    }

    @Test("a copy that saw the lost commits gets a reset and ends exactly as the new primary; one from before continues without")
    func cursorsAcrossTheFailover() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            _ = try await put(store, "a", "first")
            _ = try await put(store, "b", "first")
            var before = PartitionCopy()
            _ = try await sync(&before, store)
            try await db.standbyCaughtUp()
            let oldTimeline = try await db.timeline()
            // The lost tail: a new object and an edit, which one client receives.
            _ = try await put(store, "phantom", "lost")
            let lostAck = try await put(store, "a", "lost edit")
            #expect(CursorPosition(lostAck.cursor)?.timeline == oldTimeline)
            var sawTail = before
            #expect(try await sync(&sawTail, store) == false)
            #expect(sawTail.objects[key("ChatMessage", "phantom")] != nil)

            try await db.failOverLosingTail()
            #expect(try await db.timeline() == oldTimeline + 1)
            // The new primary's commits take the lost versions, and one more.
            var acks: [UploadResult] = []
            for id in ["c", "d", "e"] { acks.append(try await put(store, id, "new")) }
            #expect(acks.map(\.version) == [3, 4, 5], "the versions of the lost commits are numbered again")
            #expect(CursorPosition(acks[0].cursor)?.timeline == oldTimeline + 1)
            // A re-sent upload is answered from its stored outcome, its cursor on the timeline its
            // version was written on.
            let resentBefore = try await put(store, "b", "first")
            #expect(resentBefore.isReplay && resentBefore.version == 2)
            #expect(CursorPosition(resentBefore.cursor)?.timeline == oldTimeline)
            let resentAfter = try await put(store, "c", "new")
            #expect(resentAfter.isReplay && resentAfter.version == 3)
            #expect(CursorPosition(resentAfter.cursor)?.timeline == oldTimeline + 1)

            let stored = try await store.snapshot(of: room)
            #expect(stored[key("ChatMessage", "phantom")] == nil)
            #expect(try await sync(&sawTail, store), "the cursor of the lost tail was continued from")
            #expect(sawTail.objects == stored, "the copy holds \(sawTail.objects.keys.map(\.id).sorted()), the database \(stored.keys.map(\.id).sorted())")
            #expect(sawTail.objects[key("ChatMessage", "a")]?.body?["text"] == "first")

            #expect(try await sync(&before, store) == false, "a cursor from before the lost tail is of this history")
            #expect(before.objects == stored)
            // And from then on both go on without a reset.
            _ = try await put(store, "f", "new")
            #expect(try await sync(&sawTail, store) == false)
            #expect(try await sync(&before, store) == false)
            #expect(sawTail.objects == before.objects)
        }
    }

    @Test("a cursor on the lost tail gets a reset even before the new primary writes (it is ahead), and a second failover tells three histories apart")
    func twoFailovers() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            _ = try await put(store, "a", "1")
            try await db.standbyCaughtUp()
            _ = try await put(store, "lost1", "x")
            var first = PartitionCopy()
            _ = try await sync(&first, store)
            try await db.failOverLosingTail()
            #expect(try await sync(&first, store), "ahead of the new primary")
            _ = try await put(store, "b", "2")  // version 2 again, on the next timeline
            try await db.standbyCaughtUp()
            _ = try await put(store, "lost2", "y")  // version 3, lost again
            var second = PartitionCopy()
            _ = try await sync(&second, store)
            try await db.failOverLosingTail()
            _ = try await put(store, "c", "3")
            _ = try await put(store, "d", "4")
            let stored = try await store.snapshot(of: room)
            #expect(Set(stored.keys.map(\.id)) == ["a", "b", "c", "d"])
            var fresh = PartitionCopy()
            #expect(try await sync(&first, store) == false, "the copy of before: reset already, at version 1 of the first timeline")
            #expect(try await sync(&second, store))
            _ = try await sync(&fresh, store)
            #expect(first.objects == stored && second.objects == stored && fresh.objects == stored)
        }
    }

    @Test("a trigger's lease after a failover: its handled position is not committed on the new timeline, and a renewal stores none of the passes of the old one")
    func triggerLeaseAcrossTheFailover() async throws {
        try await TestDatabase.with { db in
            let ledger = TriggerLedger(store: db.store())
            #expect(try await ledger.register("count"))
            let taken = try await ledger.acquireLease("count", holder: "a", duration: .seconds(60))
            #expect(taken?.position == 0)
            let renewed = try await ledger.acquireLease("count", holder: "a", duration: .seconds(60), passed: 5)
            #expect(renewed == TriggerLedger.Lease(position: 5, continued: true))
            try await db.standbyCaughtUp()
            let lost = try await ledger.advance("count", holder: "a", to: 9)
            #expect(lost)
            try await db.failOverLosingTail()
            // A handler that read events of the lost history cannot commit past them.
            let fenced = try await ledger.advance("count", holder: "a", to: 12)
            #expect(!fenced, "advanced on a lease taken on the old timeline")
            // The renewal stores none of what the holder passed there, and says so.
            let after = try await ledger.acquireLease("count", holder: "a", duration: .seconds(60), passed: 12)
            #expect(after == TriggerLedger.Lease(position: 5, continued: false))
            let advanced = try await ledger.advance("count", holder: "a", to: 6)
            #expect(advanced)
            let again = try await ledger.acquireLease("count", holder: "a", duration: .seconds(60), passed: 8)
            #expect(again == TriggerLedger.Lease(position: 8, continued: true))
        }
    }
}
