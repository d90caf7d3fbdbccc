import Foundation
import PartitionSync
import PostgresNIO
import Synchronization
import SyncProtocol
@testable import SyncStorage
import SyncTesting
import Testing

/// A many-partition apply reads, changes and writes its objects a chunk at a time and lets go
/// of each chunk once written: a trigger raising a counter in a thousand members' records of
/// ~80 kB each held all of them at once, parsed, before and after (1.1–1.6 GB for one message).
@Suite("Chunked apply", .timeLimit(.minutes(30)))
struct ChunkedApplyTests {
    /// More members than the first chunk takes, each a record of ~300 bytes in a partition of
    /// its own.
    static let members = (0..<(ApplyChunker.singleChunkObjects + 40)).map { String(format: "m%03d", $0) }
    static func member(_ id: String) -> (partition: Partition, key: ObjectKey) {
        (partition("user=\(id)"), key("Member", id))
    }

    /// A store whose statements are 1 KiB (its chunks after the first: 4 KiB, a dozen records). Every
    /// member's record holds `count` 0 and some padding.
    static func withMembers(_ body: @escaping @Sendable (TestDatabase, ObjectStore) async throws -> Void) async throws {
        try await TestDatabase.with { db in
            let store = db.store(StorageConfiguration(statementBytes: 1_024))
            var puts: [Partition: [SyncOperation]] = [:]
            for id in members {
                let (partition, key) = member(id)
                puts[partition] = [.put(key, body: ["count": 0, "padding": .string(String(repeating: "p", count: 250))])]
            }
            try await store.withWriteTransaction(author: "setup") { transaction in
                let changed = try await transaction.apply(puts)
                #expect(changed == members.count)
            }
            try await body(db, store)
        }
    }

    static func increments(by amount: Int64) -> [Partition: [SyncOperation]] {
        var operations: [Partition: [SyncOperation]] = [:]
        for id in members {
            let (partition, key) = member(id)
            operations[partition] = [.increment(key, path: path("count"), by: .int(amount))]
        }
        return operations
    }

    static func counts(_ store: ObjectStore) async throws -> [Int64] {
        var counts: [Int64] = []
        for id in members {
            let (partition, key) = member(id)
            let snapshot = try await store.changes(in: partition, after: nil)
            #expect(snapshot.objects.map(\.key) == [key])
            counts.append(snapshot.objects.first?.body?["count"]?.intValue ?? -1)
        }
        return counts
    }

    @Test("beyond one chunk: every change written at its partition's one new version, the transaction left holding none of them, the commit naming each partition without its changes")
    func writesEveryChunk() async throws {
        try await Self.withMembers { db, store in
            let commits = Mutex<[Commit]>([])
            store.observeCommits { commit in commits.withLock { $0.append(commit) } }
            let versionsBefore = Dictionary(uniqueKeysWithValues: try await store.headVersions(of: Self.members.map { Self.member($0).partition }))
            try await store.withWriteTransaction(author: "tester") { transaction in
                transaction.defersWrites = true
                transaction.defersEncoding = true
                let changed = try await transaction.apply(Self.increments(by: 2))
                #expect(changed == Self.members.count)
                // Written and let go: no change, known body or staged write is held.
                #expect(transaction.record.changes.isEmpty && transaction.record.staged.isEmpty)
                #expect(transaction.record.known.isEmpty && transaction.record.touched.isEmpty)
                #expect(transaction.record.released.count == Self.members.count)
                #expect(transaction.changeCount == Self.members.count)
                // Reads in the transaction see the written state.
                let (_, first) = Self.member(Self.members[0])
                let read = try await transaction.bodies(of: [first])
                #expect(read[first]?["count"] == 2)
            }
            #expect(try await Self.counts(store) == Array(repeating: 2, count: Self.members.count))
            let versionsAfter = Dictionary(uniqueKeysWithValues: try await store.headVersions(of: Self.members.map { Self.member($0).partition }))
            for (partition, version) in versionsAfter { #expect(version == versionsBefore[partition]! + 1) }
            let last = try #require(commits.withLock { $0.last })
            #expect(last.partitions.map(\.partition) == Self.members.map { Self.member($0).partition }.sorted())
            #expect(last.partitions.allSatisfy { $0.changes == nil })
            #expect(last.partitions.allSatisfy { $0.version == versionsAfter[$0.partition] })
            // An increment is not idempotent: applied twice, it would show as 4 here.
            try await store.withWriteTransaction(author: "tester") { transaction in
                try await transaction.apply(Self.increments(by: 1))
            }
            #expect(try await Self.counts(store) == Array(repeating: 3, count: Self.members.count))
        }
    }

    @Test("the events of chunked changes: those the store records are recorded with both bodies, in order; the others not at all")
    func screenedEvents() async throws {
        try await Self.withMembers { db, store in
            let log = EventLog(store: store)
            try await log.sequence()
            let start = try await log.events(after: 0, limit: 1_000).last?.position ?? 0
            // Only the changes of even members are wanted.
            store.recordEvents(.matching { event in
                guard let id = event.key?.id, let n = Int(id.dropFirst()) else { return true }
                return n % 2 == 0
            })
            try await store.withWriteTransaction(author: "tester") { transaction in
                transaction.defersWrites = true
                transaction.defersEncoding = true
                try await transaction.apply(Self.increments(by: 5))
            }
            try await log.sequence()
            let events = try await log.events(after: start, limit: 1_000)
            #expect(events.compactMap { $0.key?.id } == Self.members.enumerated().filter { $0.offset % 2 == 0 }.map(\.element))
            #expect(events.allSatisfy { $0.before?["count"] == 0 && $0.after?["count"] == 5 && $0.operation == .update })
            #expect(events.allSatisfy { $0.changedFields == ["count"] && $0.author == "tester" })
        }
    }

    @Test("the events of chunked changes are recorded as their chunks are let go, not held to the commit, and take the transaction's clock and order")
    func eventsRecordedAsLetGo() async throws {
        try await Self.withMembers { db, store in
            store.recordEvents(.all)
            // A partition whose clock is ahead of every member's: written later in the
            // transaction, it raises the transaction's clock after the members' events were recorded.
            let hot = partition("room=hot")
            for n in 0..<30 { try await store.apply([.put(key("Note", "n\(n)"), body: [:])], in: hot) }
            let log = EventLog(store: store)
            try await log.sequence()
            let start = try await log.head()
            let held = try await store.withWriteTransaction(author: "chunker") { transaction in
                transaction.defersWrites = true
                transaction.defersEncoding = true
                try await transaction.apply(Self.increments(by: 5))
                let held = (transaction.record.screenedEvents.count, transaction.record.recordedEarly)
                try await transaction.apply([.put(key("Note", "last"), body: [:])], in: hot)
                return held
            }
            // Every chunk's events recorded when it was let go: the last chunk's too.
            #expect(held.0 == 0 && held.1 == Self.members.count, "held \(held.0), recorded early \(held.1)")
            try await log.sequence()
            let events = try await log.events(after: start, limit: 1_000)
            #expect(events.compactMap { $0.key?.id } == Self.members + ["last"])
            #expect(events.dropLast().allSatisfy { $0.after?["count"] == 5 && $0.author == "chunker" })
            // One clock for all of them, the one the last write raised (not the 0 they were recorded at).
            let rows = try await db.client.query(
                "SELECT count(DISTINCT clock), min(clock) FROM psync_events WHERE author = 'chunker'", logger: db.logger)
            var clocks = (distinct: 0, lowest: Int64(0))
            for try await row in rows.decode((Int, Int64).self) { clocks = row }
            var byClock: [String] = []
            for try await (clock, count) in try await db.client.query(
                "SELECT clock, count(*) FROM psync_events WHERE author = 'chunker' GROUP BY clock ORDER BY clock", logger: db.logger
            ).decode((Int64, Int).self) { byClock.append("\(count) at \(clock)") }
            #expect(clocks.distinct == 1 && clocks.lowest > 0, "events by clock: \(byClock)")
        }
    }

    @Test("the changes the store's screen keeps reach the commit beside the partitions let go of, with the generation the screen had")
    func screenKeeps() async throws {
        try await Self.withMembers { db, store in
            let commits = Mutex<[Commit]>([])
            store.observeCommits { commit in commits.withLock { $0.append(commit) } }
            let asked = Mutex(0)
            store.screenReleasedChanges(ChangeScreen(generation: { 41 }, keeps: { partition, change in
                asked.withLock { $0 += 1 }
                return change.key.id == "m003"
            }))
            try await store.withWriteTransaction(author: "tester") { transaction in
                transaction.defersWrites = true
                try await transaction.apply(Self.increments(by: 1))
            }
            #expect(asked.withLock { $0 } == Self.members.count)
            let last = try #require(commits.withLock { $0.last })
            #expect(last.screenedAt == 41)
            let kept = last.partitions.flatMap(\.kept)
            #expect(kept.map(\.key) == [Self.member("m003").key])
            #expect(kept.first?.before.body?["count"] == 0 && kept.first?.after.body?["count"] == 1)
            #expect(last.partitions.first { $0.partition == Self.member("m003").partition }?.kept.count == 1)
        }
    }

    @Test("a refusal in a later chunk leaves none of the earlier chunks written, and the transaction goes on")
    func refusalLeavesNothing() async throws {
        try await Self.withMembers { db, store in
            var operations = Self.increments(by: 1)
            // The last partition (in order) names an object that does not exist.
            let (lastPartition, _) = Self.member(Self.members.last!)
            operations[lastPartition]!.append(.increment(key("Member", "nobody"), path: path("count"), by: 1))
            try await store.withWriteTransaction(author: "tester") { transaction in
                transaction.defersWrites = true
                await #expect(throws: SyncError.self) { try await transaction.apply(operations) }
                #expect(transaction.changeCount == 0)
                try await transaction.apply([.increment(Self.member("m000").key, path: path("count"), by: 7)], in: Self.member("m000").partition)
            }
            var expected = Array(repeating: Int64(0), count: Self.members.count)
            expected[0] = 7
            #expect(try await Self.counts(store) == expected)
        }
    }
}
