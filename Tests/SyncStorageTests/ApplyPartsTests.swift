import Foundation
import PartitionSync
import PostgresNIO
import Synchronization
import SyncProtocol
@testable import SyncStorage
import SyncTesting
import Testing

/// A many-partition apply committed in parts (``WriteTransaction/applyInParts(_:)``): the
/// groups it applies and where it commits, as pure logic, then in a transaction.
@Suite("Apply in parts", .timeLimit(.minutes(30)))
struct ApplyPartsTests {
    // MARK: The groups and the commits, as pure logic

    @Test("the first group takes eight partitions, the later ones what the last one's bytes per partition say fit the part, at least one and at most 256")
    func groups() {
        var parts = ApplyParts(budget: 10_000)
        #expect(parts.nextGroup(remaining: 100) == ApplyParts.firstGroup)
        #expect(parts.nextGroup(remaining: 3) == 3)
        #expect(parts.nextGroup(remaining: 0) == 0)
        // 8 partitions of 500 bytes: 4,000 written, 6,000 left, 12 partitions fit.
        #expect(parts.wrote(partitions: 8, bytes: 4_000) == false)
        #expect(parts.nextGroup(remaining: 100) == 12)
        #expect(parts.nextGroup(remaining: 5) == 5)
        // Partitions larger than what is left of the part: one at a time.
        #expect(parts.wrote(partitions: 1, bytes: 5_999) == false)
        #expect(parts.nextGroup(remaining: 100) == 1)
        // Tiny partitions: no more than the largest group.
        var tiny = ApplyParts(budget: 1 << 30)
        _ = tiny.wrote(partitions: 8, bytes: 8)
        #expect(tiny.nextGroup(remaining: 10_000) == ApplyParts.largestGroup)
        // Partitions whose operations changed nothing (done already): the largest groups, no commit.
        var done = ApplyParts(budget: 1)
        #expect(done.wrote(partitions: 8, bytes: 0) == false)
        #expect(done.nextGroup(remaining: 10_000) == ApplyParts.largestGroup)
    }

    @Test("a part commits once its groups wrote the budget, exactly at it too, and the next part starts from nothing")
    func commits() {
        var parts = ApplyParts(budget: 1_000)
        #expect(parts.wrote(partitions: 2, bytes: 999) == false)
        #expect(parts.wrote(partitions: 1, bytes: 1) == true)
        #expect(parts.written == 0)
        #expect(parts.nextGroup(remaining: 100) == 100)
        #expect(parts.nextGroup(remaining: 1_000) == ApplyParts.largestGroup)
        #expect(parts.wrote(partitions: 1, bytes: 1_500) == true)
        // A budget of 0 or less is one byte: every group its own part.
        var smallest = ApplyParts(budget: 0)
        #expect(smallest.budget == 1)
        #expect(smallest.wrote(partitions: 8, bytes: 8) == true)
        #expect(smallest.nextGroup(remaining: 100) == 1)
    }

    // MARK: In a transaction

    static let members = (0..<40).map { String(format: "m%02d", $0) }

    static func marks() -> [Partition: [SyncOperation]] {
        var operations: [Partition: [SyncOperation]] = [:]
        for id in members {
            operations[partition("user=\(id)")] = [.put(key("Member", id), body: ["mark": .string(String(repeating: "x", count: 100))])]
        }
        return operations
    }

    static func stored(_ store: ObjectStore) async throws -> Int {
        var count = 0
        for id in members where try await store.body(of: key("Member", id)) != nil { count += 1 }
        return count
    }

    struct Refused: Error {}

    @Test("parts commit as the apply goes: others read them before the transaction ends, and a failure after them rolls back only what followed the last part")
    func partsCommit() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let fences = Counter()
            await #expect(throws: Refused.self) {
                try await store.withWriteTransaction(author: "trigger:parts") { transaction in
                    transaction.defersWrites = true
                    transaction.partCommits = .init(bytes: 1_000) { _ in fences.add() }
                    #expect(try await transaction.applyInParts(Self.marks()) == Self.members.count)
                    #expect(transaction.partsCommitted > 1)
                    // Another connection reads the parts committed so far.
                    let seen = try await Self.stored(store)
                    #expect(seen > 0 && seen <= Self.members.count)
                    #expect(fences.value == transaction.partsCommitted)
                    try await transaction.apply([.put(key("Tally", "t"), body: [:])], in: partition("tally=all"))
                    throw Refused()
                }
            }
            // The parts stay; the tally, after the last part, was rolled back.
            let kept = try await Self.stored(store)
            #expect(kept > 0)
            #expect(try await store.body(of: key("Tally", "t")) == nil)
            // Each part's changes are events of the author's, each object once, in as many
            // transactions as parts.
            let rows = try await db.client.query(
                "SELECT count(*), count(DISTINCT object_id), count(DISTINCT xid) FROM psync_events WHERE author = 'trigger:parts'",
                logger: db.logger)
            for try await (events, objects, transactions) in rows.decode((Int, Int, Int).self) {
                #expect(events == kept && objects == kept)
                #expect(transactions == fences.value)
            }
        }
    }

    @Test("a group's objects are let go of once written, not held until the part commits: the transaction keeps none of their changes or states, and commits them with their events")
    func groupsLetGo() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.withWriteTransaction(author: "trigger:parts") { transaction async throws in
                transaction.partCommits = .init(bytes: 1 << 30) { _ in }
                #expect(try await transaction.applyInParts(Self.marks()) == Self.members.count)
                #expect(transaction.partsCommitted == 0)
                #expect(transaction.changes.isEmpty, "changes held: \(transaction.changes.count)")
                #expect(transaction.record.known.isEmpty && transaction.record.touched.isEmpty, "states held: \(transaction.record.known.count)")
            }
            #expect(try await Self.stored(store) == Self.members.count)
            let rows = try await db.client.query(
                "SELECT count(*), count(DISTINCT object_id) FROM psync_events WHERE author = 'trigger:parts'", logger: db.logger)
            for try await (events, objects) in rows.decode((Int, Int).self) {
                #expect(events == Self.members.count && objects == Self.members.count)
            }
        }
    }

    @Test("no part commits past a fence that throws, inside a savepoint, or in a transaction that may not commit in parts")
    func noPartWhereNotAllowed() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await Self.rolledBack(store, author: "trigger:parts") { transaction in
                transaction.partCommits = .init(bytes: 1) { _ in throw Refused() }
                _ = try await transaction.applyInParts(Self.marks())
            }
            #expect(try await Self.stored(store) == 0)
            try await Self.rolledBack(store, author: "trigger:parts") { transaction in
                transaction.partCommits = .init(bytes: 1) { _ in }
                _ = try await transaction.withSavepoint { try await transaction.applyInParts(Self.marks()) }
                #expect(transaction.partsCommitted == 0)
                throw Refused()
            }
            #expect(try await Self.stored(store) == 0)
            try await Self.rolledBack(store, author: "client") { transaction in
                #expect(try await transaction.applyInParts(Self.marks()) == Self.members.count)
                #expect(transaction.partsCommitted == 0)
                throw Refused()
            }
            #expect(try await Self.stored(store) == 0)
        }
    }

    /// Runs `body` in a write transaction, expecting it to end with ``Refused``.
    static func rolledBack(_ store: ObjectStore, author: String, _ body: (WriteTransaction) async throws -> Void) async throws {
        do {
            try await store.withWriteTransaction(author: author, body)
            Issue.record("the transaction committed")
        } catch is Refused {}
    }

    /// Counts a fence's runs.
    final class Counter: Sendable {
        private let count = Mutex(0)
        func add() { count.withLock { $0 += 1 } }
        var value: Int { count.withLock { $0 } }
    }
}
