import Foundation
import Locking
import PartitionSync
import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import SyncTriggers
import Testing

/// An error of a handler that a later attempt may not meet: retried.
struct NotYet: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Counts calls across tasks.
final class Calls: Sendable {
    private let count = Locked(0)
    func next() -> Int { count.withLock { $0 += 1; return $0 } }
    var total: Int { count.withLock { $0 } }
}

@Suite("Triggers", .timeLimit(.minutes(30)))
struct TriggerTests {
    let room = partition("room=r1")
    let tally = partition("tally=all")

    /// A trigger that counts each inserted Message in a Tally object, through the context.
    func counting(name: String = "count", mode: Trigger.Mode = .ordered, calls: Calls? = nil, failFirst: Int = 0) -> Trigger {
        Trigger(name: name, collections: ["Message"], operations: [.insert], mode: mode, retry: .init(attempts: 4, initialBackoff: .milliseconds(10))) { event, context in
            let call = calls?.next() ?? failFirst + 1
            try await context.apply([.put(key("Tally", "t"), body: [:]), .increment(key("Tally", "t"), path: path("messages"), by: 1),
                                     .arrayAppend(key("Tally", "t"), path: path("seen"), value: .int(event.position))], in: partition("tally=all"))
            if call <= failFirst { throw SyncError(.internal, "failing on purpose (call \(call))") }
        }
    }

    func tallyBody(_ store: ObjectStore) async throws -> [String: JSONValue]? {
        try await store.body(of: key("Tally", "t"))
    }

    @Test("each matching event is handled once, in order; other events are passed over")
    func orderedExactlyOnce() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let service = TriggerHarness.service(store, [counting()])
            try await TriggerHarness.running([service]) {
                for n in 0..<30 {
                    try await store.upload(Upload(partition: room, operations: [.put(key("Message", "m\(n)"), body: ["n": .int(Int64(n))]), .put(key("Other", "o\(n)"), body: [:])], principal: "u"))
                    if n % 3 == 0 { try await store.upload(Upload(partition: room, operations: [.set(key("Message", "m\(n)"), path: path("edited"), value: true)], principal: "u")) }
                }
                #expect(try await TriggerHarness.eventually { try await tallyBody(store)?["messages"] == 30 })
                let seen = try await tallyBody(store)?["seen"]?.arrayValue?.compactMap(\.intValue) ?? []
                #expect(seen == seen.sorted())
                #expect(seen.count == 30)
                // Position passes the last event, including events the trigger does not handle —
                // its own Tally writes too, which may be numbered after the count is seen, so
                // the head is read again on each look.
                #expect(try await TriggerHarness.eventually {
                    let head = try await EventLog(store: store).head()
                    return try await TriggerLedger(store: store).statuses().first?.position == head
                })
            }
        }
    }

    @Test("a run of events is split into transactions of at most changesPerTransaction changes, each object written once per transaction")
    func changeBudget() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            // Seven messages wait before the trigger starts, so they arrive in one run. (A trigger
            // starts at the head when it is registered: register it first.)
            try await TriggerLedger(store: store).register("count")
            for n in 0..<7 {
                try await store.upload(Upload(partition: room, operations: [.put(key("Message", "m\(n)"), body: [:])], principal: "u"))
            }
            var configuration = TestTriggers.fastConfiguration
            configuration.changesPerTransaction = 2
            // Events are recorded only when a trigger matches them: this one makes the Tally
            // changes recorded, so the transactions that wrote them can be counted.
            let watcher = Trigger(name: "watch-tally", collections: ["Tally"]) { _, _ in }
            let service = TriggerHarness.service(store, [counting(), watcher], configuration: configuration)
            try await TriggerHarness.running([service]) {
                let counted = try await TriggerHarness.eventually { try await tallyBody(store)?["messages"] == 7 }
                #expect(counted)
            }
            // One change per event: transactions of 2, 2, 2 and 1 events, each its own commit.
            let rows = try await db.client.query(
                "SELECT count(*), count(DISTINCT xid) FROM psync_events WHERE author = 'trigger:count'", logger: db.logger)
            for try await (events, transactions) in rows.decode((Int, Int).self) {
                #expect(events == 7)
                #expect(transactions == 4)
            }
            #expect(try await tallyBody(store)?["seen"]?.arrayValue?.count == 7)
        }
    }

    @Test("a run of events is split into transactions that end at the event bringing the objects read to bytesPerTransaction, each event handled once")
    func byteBudget() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            // Seven records of about 10 kB each, and seven messages that wait before the
            // trigger starts, so they arrive in one run; each message's handler reads its record
            // (one read: the partition is locked first) and marks it.
            let filler = JSONValue.string(String(repeating: "x", count: 10_000))
            for n in 0..<7 {
                try await store.upload(Upload(partition: partition("big=b\(n)"), operations: [.put(key("Big", "b\(n)"), body: ["filler": filler])], principal: "u"))
            }
            try await TriggerLedger(store: store).register("mark")
            for n in 0..<7 {
                try await store.upload(Upload(partition: room, operations: [.put(key("Message", "m\(n)"), body: ["n": .int(Int64(n))])], principal: "u"))
            }
            let mark = Trigger(name: "mark", collections: ["Message"], operations: [.insert]) { event, context in
                let n = event.after?["n"]?.intValue ?? 0
                let big = partition("big=b\(n)")
                try await context.apply([.set(key("Big", "b\(n)"), path: path("marked"), value: true)], in: big)
            }
            var configuration = TestTriggers.fastConfiguration
            // Past the budget with the second record read: transactions of 2, 2, 2 and 1 events.
            configuration.bytesPerTransaction = 15_000
            let watcher = Trigger(name: "watch-big", collections: ["Big"]) { _, _ in }
            let service = TriggerHarness.service(store, [mark, watcher], configuration: configuration)
            try await TriggerHarness.running([service]) {
                let marked = try await TriggerHarness.eventually {
                    try await db.scalar("SELECT count(*) FROM psync_objects WHERE collection = 'Big' AND body ? 'marked'") == 7
                }
                #expect(marked)
            }
            let rows = try await db.client.query(
                "SELECT count(*), count(DISTINCT xid) FROM psync_events WHERE author = 'trigger:mark'", logger: db.logger)
            for try await (events, transactions) in rows.decode((Int, Int).self) {
                #expect(events == 7, "an event handled twice, or not at all")
                #expect(transactions == 4)
            }
        }
    }

    @Test("an event handler's reads stop at the bytes budget too (one event at least): each event is still handled once, in order")
    func eventHandlerBytesBudget() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            // Ten messages wait before the trigger starts: one read of 100 would take them all.
            try await TriggerLedger(store: store).register("count")
            for n in 0..<10 {
                try await store.upload(Upload(partition: room, operations: [.put(key("Message", "m\(n)"), body: ["n": .int(Int64(n))])], principal: "u"))
            }
            var configuration = TestTriggers.fastConfiguration
            configuration.runBytes = 1
            let watcher = Trigger(name: "watch-tally", collections: ["Tally"]) { _, _ in }
            let service = TriggerHarness.service(store, [counting(), watcher], configuration: configuration)
            try await TriggerHarness.running([service]) {
                let counted = try await TriggerHarness.eventually { try await tallyBody(store)?["messages"] == 10 }
                #expect(counted)
            }
            let seen = try await tallyBody(store)?["seen"]?.arrayValue?.compactMap(\.intValue) ?? []
            #expect(seen.count == 10 && seen == seen.sorted())
            // A read of one event each: ten transactions (one read of all ten would commit them in one).
            let rows = try await db.client.query(
                "SELECT count(*), count(DISTINCT xid) FROM psync_events WHERE author = 'trigger:count'", logger: db.logger)
            for try await (events, transactions) in rows.decode((Int, Int).self) {
                #expect(events == 10)
                #expect(transactions == 10)
            }
        }
    }

    @Test("a trigger whose images leave out an unchanged field is handed updates without it, and inserts and the updates that change it whole")
    func imagesWithoutUnchanged() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            // Each event's view of `members`, appended to a Tally in order: present or not.
            let trigger = Trigger(name: "members-view", collections: ["Group"], images: .withoutUnchanged(["members"])) { event, context in
                let view = "\(event.operation):\(event.before?["members"] != nil):\(event.after?["members"] != nil)"
                try await context.apply([.put(key("Tally", "t"), body: [:]), .arrayAppend(key("Tally", "t"), path: path("seen"), value: .string(view))], in: tally)
            }
            let group = key("Group", "g")
            let members = JSONValue.array((0..<100).map { .string("member-\($0)") })
            try await TriggerHarness.running([TriggerHarness.service(store, [trigger])]) {
                try await store.upload(Upload(partition: room, operations: [.put(group, body: ["members": members, "name": "a"])], principal: "u"))
                try await store.upload(Upload(partition: room, operations: [.set(group, path: path("name"), value: "b")], principal: "u"))
                try await store.upload(Upload(partition: room, operations: [.arrayAppend(group, path: path("members"), value: "m")], principal: "u"))
                try await store.upload(Upload(partition: room, operations: [.delete(group)], principal: "u"))
                #expect(try await TriggerHarness.eventually { try await tallyBody(store)?["seen"]?.arrayValue?.count == 4 })
            }
            let seen = try await tallyBody(store)?["seen"]?.arrayValue?.compactMap(\.stringValue)
            #expect(seen == ["insert:false:true", "update:false:false", "update:true:true", "delete:true:false"])
        }
    }

    @Test("a failing handler is retried with backoff and its failed attempts leave no writes")
    func retries() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let calls = Calls()
            let service = TriggerHarness.service(store, [counting(calls: calls, failFirst: 2)])
            try await TriggerHarness.running([service]) {
                try await store.upload(Upload(partition: room, operations: [.put(key("Message", "m"), body: [:])], principal: "u"))
                #expect(try await TriggerHarness.eventually { try await tallyBody(store)?["messages"] == 1 })
                // Caught up: no attempt is left to come.
                #expect(try await TriggerHarness.eventually { try await db.triggersCaughtUp() })
                #expect(calls.total == 3)
                #expect(try await tallyBody(store)?["messages"] == 1)
                #expect(try await TriggerLedger(store: store).deadLetters().isEmpty)
            }
        }
    }

    @Test("after its attempts an event is dead-lettered, the trigger goes on, and a retry replays it once")
    func deadLetterAndRetry() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let poison = Trigger(name: "poison", collections: ["Message"], retry: .init(attempts: 3, initialBackoff: .milliseconds(5))) { event, context in
                if event.after?["poison"] == true, try await context.body(of: key("Switch", "fixed")) == nil {
                    throw NotYet(message: "poisoned message")
                }
                try await context.apply([.put(key("Tally", "t"), body: [:]), .increment(key("Tally", "t"), path: path("messages"), by: 1)], in: partition("tally=all"))
            }
            let service = TriggerHarness.service(store, [poison])
            try await TriggerHarness.running([service]) {
                try await store.upload(Upload(partition: room, operations: [.put(key("Message", "bad"), body: ["poison": true])], principal: "u"))
                try await store.upload(Upload(partition: room, operations: [.put(key("Message", "good"), body: [:])], principal: "u"))
                #expect(try await TriggerHarness.eventually(timeout: .seconds(60)) { try await tallyBody(store)?["messages"] == 1 })
                let letters = try await TriggerLedger(store: store).deadLetters()
                try #require(letters.count == 1)
                #expect(letters.first?.attempts == 3)
                #expect(letters.first?.error.contains("poisoned message") == true)
                let admin = TriggerAdmin(store: store, triggers: [poison], logger: db.logger)
                // Still broken: the retry fails and the letter stays open.
                await #expect(throws: (any Error).self) { try await admin.retry(letters[0].id) }
                #expect(try await admin.deadLetters().count == 1)
                try await store.upload(Upload(partition: partition("switch=s"), operations: [.put(key("Switch", "fixed"), body: [:])], principal: "ops"))
                try await admin.retry(letters[0].id)
                #expect(try await tallyBody(store)?["messages"] == 2)
                #expect(try await admin.deadLetters().isEmpty)
                await #expect(throws: TriggerError.self) { try await admin.retry(letters[0].id) }
                #expect(try await tallyBody(store)?["messages"] == 2)
                let report = try await admin.reports().first
                #expect(report?.name == "poison")
                #expect(report?.deadLetters == 0)
            }
        }
    }

    @Test("a handler's write refused by the engine is dead-lettered at its first attempt: the events behind it do not wait for retries")
    func refusalIsNotRetried() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            // Backoff of an hour: were the refusal retried, the good message would wait for it
            // past the test's time limit.
            let strict = Trigger(name: "strict", collections: ["Message"], retry: .init(attempts: 5, initialBackoff: .seconds(3600))) { event, context in
                let target = event.after?["target"]?.stringValue ?? "n"
                // A path through a string: type_mismatch, however often it is tried.
                try await context.apply([.put(key("Tally", "t"), body: ["s": "text"]), .increment(key("Tally", "t"), path: path(target), by: 1)], in: partition("tally=all"))
            }
            let service = TriggerHarness.service(store, [strict])
            try await TriggerHarness.running([service]) {
                try await store.upload(Upload(partition: room, operations: [.put(key("Message", "bad"), body: ["target": "s.deeper"])], principal: "u"))
                try await store.upload(Upload(partition: room, operations: [.put(key("Message", "good"), body: [:])], principal: "u"))
                #expect(try await TriggerHarness.eventually { try await tallyBody(store)?["n"] == 1 })
                let letters = try await TriggerLedger(store: store).deadLetters()
                #expect(letters.count == 1)
                #expect(letters.first?.attempts == 1)
                #expect(letters.first?.error.contains("type_mismatch") == true)
            }
        }
    }

    @Test("a cycle of triggers stops at the depth limit with a dead letter")
    func cycle() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            // Every Ping write writes the Ping again: an endless loop without the limit.
            let loop = Trigger(name: "loop", collections: ["Ping"]) { event, context in
                try await context.apply([.increment(event.key!, path: path("hops"), by: 1)], in: event.partition!)
            }
            var configuration = TriggerHarness.fastConfiguration
            configuration.maximumDepth = 5
            let service = TriggerHarness.service(store, [loop], configuration: configuration)
            try await TriggerHarness.running([service]) {
                try await store.upload(Upload(partition: room, operations: [.put(key("Ping", "p"), body: ["hops": 0])], principal: "u"))
                #expect(try await TriggerHarness.eventually { try await !TriggerLedger(store: store).deadLetters().isEmpty })
                let letter = try #require(try await TriggerLedger(store: store).deadLetters().first)
                #expect(letter.error.hasPrefix("trigger_depth_exceeded"))
                // Caught up: no hop is left to come.
                #expect(try await TriggerHarness.eventually { try await db.triggersCaughtUp() })
                #expect(try await store.body(of: key("Ping", "p"))?["hops"] == 5)
            }
        }
    }

    @Test("with two instances the trigger runs on one, and the other takes over when it stops")
    func leaseTakeover() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let first = TriggerHarness.service(store, [counting()], instance: "first")
            let second = TriggerHarness.service(store, [counting()], instance: "second")
            try await TriggerHarness.running([second]) {
                try await TriggerHarness.running([first]) {
                    for n in 0..<10 {
                        try await store.upload(Upload(partition: room, operations: [.put(key("Message", "a\(n)"), body: [:])], principal: "u"))
                    }
                    #expect(try await TriggerHarness.eventually { try await tallyBody(store)?["messages"] == 10 })
                    let holder = try await TriggerLedger(store: store).statuses().first?.leaseHolder
                    #expect(holder == "first" || holder == "second")
                }
                // `first` has stopped (and released its lease if it held it); `second` handles the rest.
                for n in 0..<10 {
                    try await store.upload(Upload(partition: room, operations: [.put(key("Message", "b\(n)"), body: [:])], principal: "u"))
                }
                #expect(try await TriggerHarness.eventually { try await tallyBody(store)?["messages"] == 20 })
                #expect(try await TriggerLedger(store: store).statuses().first?.leaseHolder == "second")
                let seen = try await tallyBody(store)?["seen"]?.arrayValue ?? []
                #expect(seen.count == Set(seen).count, "an event was handled twice")
            }
        }
    }

    @Test("a lease held by an instance that died is taken over once it expires")
    func expiredLease() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await TriggerLedger(store: store).register("count")
            // An instance that took the lease and died without releasing it.
            #expect(try await TriggerLedger(store: store).acquireLease("count", holder: "dead", duration: .milliseconds(200)) != nil)
            let dead = try #require(try await TriggerLedger(store: store).statuses().first?.leaseExpires)
            let service = TriggerHarness.service(store, [counting()], instance: "survivor")
            try await TriggerHarness.running([service]) {
                try await store.upload(Upload(partition: room, operations: [.put(key("Message", "m"), body: [:])], principal: "u"))
                #expect(try await TriggerHarness.eventually { try await tallyBody(store)?["messages"] == 1 })
                // The survivor's write came after the dead lease's expiry, both by the database's clock.
                let rows = try await db.client.query(
                    "SELECT created_at FROM psync_objects WHERE collection = 'Tally' AND id = 't'", logger: db.logger)
                var handled: Date?
                for try await at in rows.decode(Date?.self) { handled = at }
                #expect(try #require(handled) >= dead, "took the lease before it expired")
                #expect(try await TriggerLedger(store: store).statuses().first?.leaseHolder == "survivor")
            }
        }
    }

    @Test("concurrent mode handles every event exactly once")
    func concurrentMode() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let service = TriggerHarness.service(store, [counting(mode: .concurrent(maximum: 4))])
            try await TriggerHarness.running([service]) {
                for n in 0..<40 {
                    try await store.upload(Upload(partition: room, operations: [.put(key("Message", "m\(n)"), body: [:])], principal: "u"))
                }
                #expect(try await TriggerHarness.eventually { try await tallyBody(store)?["messages"] == 40 })
                let seen = try await tallyBody(store)?["seen"]?.arrayValue ?? []
                #expect(Set(seen).count == 40)
            }
        }
    }
}
