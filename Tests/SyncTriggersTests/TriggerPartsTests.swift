import Foundation
import Locking
import PartitionSync
import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import SyncTriggers
import Testing

/// A handler's work committed in parts (``TriggerContext/applyInParts(_:)``): too large for
/// one transaction, kept when the handler fails after it, and done once by an idempotent
/// handler run again.
@Suite("Trigger work in parts", .timeLimit(.minutes(30)))
struct TriggerPartsTests {
    static let members = (0..<30).map { String(format: "m%02d", $0) }

    /// Each member's record, with no marks, in a partition of its own.
    static func storeMembers(_ store: ObjectStore) async throws {
        var setup: [Partition: [SyncOperation]] = [:]
        for id in members { setup[partition("user=\(id)")] = [.put(key("Member", id), body: ["marks": []])] }
        try await store.withWriteTransaction(author: "setup") { transaction in _ = try await transaction.apply(setup) }
    }

    /// Runs `trigger` with parts of `partBytes`, makes room r1, and runs `body` meanwhile.
    static func inviting(_ store: ObjectStore, _ trigger: Trigger, partBytes: Int, _ body: @escaping @Sendable () async throws -> Void) async throws {
        var configuration = TestTriggers.fastConfiguration
        configuration.partBytes = partBytes
        try await TestTriggers.running([TestTriggers.service(store, [trigger], configuration: configuration)]) {
            try await store.upload(Upload(partition: partition("room=r"), operations: [.put(key("Room", "r1"), body: [:])], principal: "u"))
            try await body()
        }
    }

    @Test("a handler failing after its parts is run again and finds them done: each member marked once (appends, not sets), the run's last writes once, the position past the event")
    func partsSurviveAFailure() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await Self.storeMembers(store)
            // How many members each run of the handler marked.
            let marked = Locked<[Int]>([])
            let trigger = Trigger(name: "invite", collections: ["Room"], operations: [.insert],
                                  retry: .init(attempts: 4, initialBackoff: .milliseconds(5))) { event, context in
                // Idempotent as applyInParts asks: the members already marked are passed over.
                let keys = Self.members.map { key("Member", $0) }
                let bodies = try await context.bodies(of: keys)
                var marks: [Partition: [SyncOperation]] = [:]
                for (id, member) in zip(Self.members, keys) where bodies[member]?["marks"]?.arrayValue?.isEmpty == true {
                    marks[partition("user=\(id)")] = [.arrayAppend(member, path: path("marks"), value: .string(event.key!.id))]
                }
                let run = marked.withLock { $0.append(marks.count); return $0.count }
                try await context.applyInParts(marks)
                // Not idempotent: commits once, with the trigger's progress.
                try await context.apply([.put(key("Tally", "t"), body: [:]), .increment(key("Tally", "t"), path: path("rooms"), by: 1)],
                                        in: partition("tally=all"))
                if run == 1 { throw NotYet(message: "failing after the parts") }
            }
            try await Self.inviting(store, trigger, partBytes: 200) { () async throws in
                #expect(try await TestTriggers.eventually { try await db.triggersCaughtUp() })
            }
            let runs = marked.withLock { $0 }
            // The first run marked every member, in parts that stayed when it failed: the second
            // found most of them done (only what followed the last part was rolled back).
            #expect(runs.count == 2 && runs[0] == Self.members.count && runs[1] < Self.members.count / 2, "members marked by each run: \(runs)")
            for id in Self.members {
                #expect(try await store.body(of: key("Member", id))?["marks"] == ["r1"], "\(id)")
            }
            #expect(try await store.body(of: key("Tally", "t"))?["rooms"] == 1)
            #expect(try await TriggerLedger(store: store).deadLetters().isEmpty)
            // The parts were transactions of their own: the members' rows were written by several.
            let rows = try await db.client.query(
                "SELECT count(DISTINCT xmin::text) FROM psync_objects WHERE collection = 'Member'", logger: db.logger)
            for try await transactions in rows.decode(Int.self) {
                #expect(transactions > 2)
            }
        }
    }

    @Test("each part renews the trigger's lease: a handler committing parts for longer than a lease keeps it (the runner's loop, busy in the handler, does not renew)")
    func partsRenewTheLease() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await Self.storeMembers(store)
            // The lease's expiry as the handler starts, and after its parts.
            let expiries = Locked<[Date]>([])
            @Sendable func expiry() async throws -> Date {
                let rows = try await db.client.query("SELECT lease_expires FROM psync_triggers WHERE name = 'invite'", logger: db.logger)
                for try await expires in rows.decode(Date.self) { return expires }
                throw NotYet(message: "no lease")
            }
            let trigger = Trigger(name: "invite", collections: ["Room"], operations: [.insert]) { event, context in
                let first = try await expiry()
                var marks: [Partition: [SyncOperation]] = [:]
                for id in Self.members {
                    marks[partition("user=\(id)")] = [.arrayAppend(key("Member", id), path: path("marks"), value: .string(event.key!.id))]
                }
                try await context.applyInParts(marks)
                let after = try await expiry()
                expiries.withLock { $0 = [first, after] }
            }
            try await Self.inviting(store, trigger, partBytes: 1) { () async throws in
                #expect(try await TestTriggers.eventually { try await db.triggersCaughtUp() })
            }
            let seen = expiries.withLock { $0 }
            #expect(seen.count == 2 && seen[1] > seen[0], "the lease's expiry before and after the parts: \(seen)")
            for id in Self.members {
                #expect(try await store.body(of: key("Member", id))?["marks"] == ["r1"], "\(id)")
            }
        }
    }

    @Test("a part after another instance took the lease does not commit: the run stops lease_lost, the earlier parts kept, nothing after them, the position where it was; the lease back, the run finishes, each member marked once")
    func partsStopWhenTheLeaseIsTaken() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await Self.storeMembers(store)
            let (first, second) = (Array(Self.members.prefix(15)), Array(Self.members.dropFirst(15)))
            let stolen = Locked(false)
            let failures = Locked<[String]>([])
            @Sendable func marks(_ ids: [String], room: String, context: TriggerContext) async throws -> [Partition: [SyncOperation]] {
                let bodies = try await context.bodies(of: ids.map { key("Member", $0) })
                var marks: [Partition: [SyncOperation]] = [:]
                for id in ids where bodies[key("Member", id)]?["marks"]?.arrayValue?.isEmpty == true {
                    marks[partition("user=\(id)")] = [.arrayAppend(key("Member", id), path: path("marks"), value: .string(room))]
                }
                return marks
            }
            let trigger = Trigger(name: "invite", collections: ["Room"], operations: [.insert]) { event, context in
                let room = event.key!.id
                try await context.applyInParts(try await marks(first, room: room, context: context))
                // Another instance takes the lease over, between two parts of this run.
                if stolen.withLock({ let was = $0; $0 = true; return !was }) {
                    try await db.client.query(
                        "UPDATE psync_triggers SET lease_holder = 'elsewhere', lease_expires = now() + interval '1 hour' WHERE name = 'invite'",
                        logger: db.logger)
                }
                do {
                    try await context.applyInParts(try await marks(second, room: room, context: context))
                } catch {
                    failures.withLock { $0.append("\(error)") }
                    throw error
                }
                try await context.apply([.put(key("Tally", "t"), body: [:]), .increment(key("Tally", "t"), path: path("rooms"), by: 1)],
                                        in: partition("tally=all"))
            }
            try await Self.inviting(store, trigger, partBytes: 1) { () async throws in
                #expect(try await TestTriggers.eventually { !failures.withLock { $0 }.isEmpty })
                let failure = failures.withLock { $0 }.first ?? ""
                #expect(failure.hasPrefix("lease_lost"), "\(failure)")
                // The first half committed in its parts; nothing of the second, nor the run's end.
                for id in first { #expect(try await store.body(of: key("Member", id))?["marks"] == ["r1"], "\(id)") }
                for id in second { #expect(try await store.body(of: key("Member", id))?["marks"] == [], "\(id)") }
                #expect(try await store.body(of: key("Tally", "t")) == nil)
                #expect(try await !db.triggersCaughtUp())
                // The other instance's lease runs out without it doing anything: this one takes
                // the trigger back, runs the handler again, and finds the first half done.
                try await db.client.query("UPDATE psync_triggers SET lease_expires = now() - interval '1 second' WHERE name = 'invite'", logger: db.logger)
                #expect(try await TestTriggers.eventually { try await db.triggersCaughtUp() })
            }
            for id in Self.members {
                #expect(try await store.body(of: key("Member", id))?["marks"] == ["r1"], "\(id)")
            }
            #expect(try await store.body(of: key("Tally", "t"))?["rooms"] == 1)
            #expect(failures.withLock { $0 }.count == 1)
            #expect(try await TriggerLedger(store: store).deadLetters().isEmpty)
        }
    }
}
