import Foundation
import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

@Suite("Snapshots and cursors", .timeLimit(.minutes(30)))
struct CursorTests {
    let room = partition("conversation=c-1")

    func message(_ n: Int) -> ObjectKey { key("ChatMessage", "m-\(String(format: "%04d", n))") }

    @Test("a snapshot larger than a page arrives in bounded pages, ordered, reset only on the first")
    func pagedSnapshot() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            for start in stride(from: 0, to: 250, by: 50) {
                try await store.apply((start..<start + 50).map { .put(message($0), body: ["n": .int(Int64($0))]) }, in: room)
            }
            var pages: [ChangeBatch] = []
            for try await page in store.changeFeed(in: room, after: nil, limit: 40) { pages.append(page) }
            #expect(pages.count == 7)
            #expect(pages.map(\.objects.count) == [40, 40, 40, 40, 40, 40, 10])
            #expect(pages.map(\.reset) == [true] + Array(repeating: false, count: 6))
            #expect(pages.map(\.upToDate) == Array(repeating: false, count: 6) + [true])
            let objects = pages.flatMap(\.objects)
            #expect(Set(objects.map(\.key)).count == 250)
            let order = objects.map { ($0.version, $0.key) }
            #expect(zip(order, order.dropFirst()).allSatisfy { $0.0 < $1.0 || ($0.0 == $1.0 && $0.1 < $1.1) })
        }
    }

    @Test("a catch-up from a cursor sends exactly the changes after it, tombstones included")
    func catchUp() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.apply((0..<10).map { .put(message($0), body: [:]) }, in: room)
            let synced = try await store.changes(in: room, after: nil)
            #expect(synced.upToDate)
            try await store.apply([.set(message(3), path: path("read"), value: true)], in: room)
            try await store.apply([.delete(message(4))], in: room)
            try await store.apply([.put(message(20), body: [:])], in: room)
            let missed = try await store.changes(in: room, after: synced.cursor)
            #expect(!missed.reset)
            #expect(missed.upToDate)
            #expect(missed.objects.map(\.key) == [message(3), message(4), message(20)])
            #expect(missed.objects.map(\.isDeleted) == [false, true, false])
            let nothing = try await store.changes(in: room, after: missed.cursor)
            #expect(nothing.objects.isEmpty)
            #expect(nothing.upToDate)
            #expect(nothing.cursor == missed.cursor)
        }
    }

    @Test("objects changed while a snapshot is paged arrive again in later pages; deletions arrive as tombstones")
    func changesDuringSnapshot() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.apply((0..<30).map { .put(message($0), body: ["v": 0]) }, in: room)
            try await store.apply([.put(message(99), body: [:])], in: room)
            try await store.apply([.delete(message(99))], in: room)  // deleted before the snapshot: not sent
            var copy: [ObjectKey: SyncObject] = [:]
            var cursor: Cursor?
            var sawTombstoneOf: Set<ObjectKey> = []
            var pages = 0
            while true {
                let page = try await store.changes(in: room, after: cursor, limit: 10)
                pages += 1
                for object in page.objects {
                    if object.isDeleted { sawTombstoneOf.insert(object.key) }
                    copy[object.key] = object.isDeleted ? nil : object
                }
                cursor = page.cursor
                if pages == 1 {
                    // Between pages: change an object already sent, delete one already sent, add one.
                    try await store.apply([.set(message(0), path: path("v"), value: 1)], in: room)
                    try await store.apply([.delete(message(1))], in: room)
                    try await store.apply([.put(message(50), body: [:])], in: room)
                }
                if page.upToDate { break }
            }
            #expect(!sawTombstoneOf.contains(message(99)))
            #expect(sawTombstoneOf.contains(message(1)))
            let database = try await store.snapshot(of: room)
            #expect(copy == database)
            #expect(copy[message(0)]?.body?["v"] == 1)
        }
    }

    @Test("cursors this database cannot continue from get a full snapshot with reset")
    func resets() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.apply((0..<5).map { .put(message($0), body: [:]) }, in: room)
            let current = try await store.changes(in: room, after: nil)
            for garbage in ["", "nonsense", "c1.", "c1.!!!", "c1.e30", String(repeating: "c1.x", count: 1000)] {
                let batch = try await store.changes(in: room, after: Cursor(rawValue: garbage))
                #expect(batch.reset, "\(garbage.prefix(20))")
                #expect(batch.objects.count == 5)
            }
            // A cursor from another partition that is ahead of this one.
            let busy = partition("conversation=busy")
            for n in 0..<10 { try await store.apply([.put(key("ChatMessage", "b-\(n)"), body: [:])], in: busy) }
            let ahead = try await store.changes(in: busy, after: nil).cursor
            #expect(try await store.changes(in: room, after: ahead).reset)
            // The same cursor still works where it came from.
            #expect(try await store.changes(in: busy, after: ahead).reset == false)
            #expect(try await store.changes(in: room, after: current.cursor).reset == false)
        }
    }

    @Test("a cursor from another database (other epoch) gets a reset")
    func foreignEpoch() async throws {
        let foreign = try await TestDatabase.with { db in
            let store = db.store()
            try await store.apply([.put(message(0), body: [:])], in: room)
            return try await store.changes(in: room, after: nil).cursor
        }
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.apply([.put(message(0), body: [:])], in: room)
            let batch = try await store.changes(in: room, after: foreign)
            #expect(batch.reset)
            #expect(batch.objects.count == 1)
        }
    }

    @Test("a cursor older than pruned tombstones gets a reset")
    func prunedTombstones() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.apply([.put(message(0), body: [:])], in: room)
            let old = try await store.changes(in: room, after: nil).cursor
            try await store.apply([.delete(message(0))], in: room)
            try await store.apply([.put(message(1), body: [:])], in: room)
            let pruned = try await store.pruneTombstones(olderThan: .zero)
            #expect(pruned == 1)
            let batch = try await store.changes(in: room, after: old)
            #expect(batch.reset)
            #expect(batch.objects.map(\.key) == [message(1)])
        }
    }

    @Test("an empty or unknown partition is up to date at once")
    func emptyPartition() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let batch = try await store.changes(in: partition("user=nobody"), after: nil)
            #expect(batch.objects.isEmpty)
            #expect(batch.upToDate)
            let again = try await store.changes(in: partition("user=nobody"), after: batch.cursor)
            #expect(!again.reset)
        }
    }
}
