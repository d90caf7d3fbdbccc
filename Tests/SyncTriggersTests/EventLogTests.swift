import PartitionSync
import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import SyncTriggers
import Testing

@Suite("Change events", .timeLimit(.minutes(30)))
struct EventLogTests {
    @Test("an event holds the operation, documents before and after, changed and removed fields, author")
    func eventContents() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("conversation=c-1")
            let doc = key("Doc", "d")
            try await store.upload(Upload(partition: room, operations: [.put(doc, body: ["a": 1, "nested": ["x": 1, "y": 2], "gone": true])], principal: "u1"))
            try await store.upload(Upload(partition: room, operations: [.set(doc, path: path("nested.x"), value: 5), .unset(doc, path: path("gone"))], principal: "u2"))
            try await store.upload(Upload(partition: room, operations: [.put(doc, body: ["a": 2])], principal: "u2"))
            try await store.upload(Upload(partition: room, operations: [.delete(doc)], principal: "u3"))
            let log = EventLog(store: store)
            #expect(try await log.sequence() == 4)
            let events = try await log.events(after: 0, limit: 10)
            #expect(events.map(\.position) == [1, 2, 3, 4])
            #expect(events.map(\.operation) == [.insert, .update, .replace, .delete])
            #expect(events.map(\.author) == ["u1", "u2", "u2", "u3"])
            #expect(events.allSatisfy { $0.key == doc && $0.partition == room && $0.kind == .object && $0.depth == 0 })
            #expect(events.map(\.version) == [1, 2, 3, 4])
            #expect(events[0].before == nil)
            #expect(events[0].after?["a"] == 1)
            #expect(events[1].changedFields == ["nested.x"])
            #expect(events[1].removedFields == ["gone"])
            #expect(events[1].before?["nested"] == ["x": 1, "y": 2])
            #expect(events[1].after?["nested"] == ["x": 5, "y": 2])
            #expect(events[2].changedFields == ["a"])
            #expect(events[3].after == nil)
            #expect(events[3].before?["a"] == 2)
        }
    }

    @Test("a filtered read returns only the events that pass, and how far the reader may move past the others")
    func filteredRead() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("conversation=c-1")
            // Positions 1…10: Note inserts at 3 and 7, a Note update at 8, the rest Docs; 11 replaces a Note.
            for n in 1...10 {
                let collection = [3, 7, 8].contains(n) ? "Note" : "Doc"
                let id = n == 3 || n == 8 ? "n3" : "x\(n)"
                let operation: SyncOperation = n == 8 ? .set(key("Note", "n3"), path: path("v"), value: 8) : .put(key(collection, id), body: ["v": .int(Int64(n))])
                try await store.upload(Upload(partition: room, operations: [operation], principal: "u"))
            }
            try await store.upload(Upload(partition: room, operations: [.put(key("Note", "n3"), body: ["v": 3])], principal: "u"))
            let log = EventLog(store: store)
            try await log.sequence()
            let inserts = ChangeEvent.Filter(kinds: [.object], collections: ["Note"], operations: [.insert])
            var (events, through, _) = try await log.events(after: 0, limit: 10, scan: 100, filter: inserts)
            #expect(events.map(\.position) == [3, 7])
            #expect(through == 11)
            // The limit stops at the last event returned; the scan window bounds the range read.
            (events, through, _) = try await log.events(after: 0, limit: 1, scan: 100, filter: inserts)
            #expect(events.map(\.position) == [3] && through == 3)
            (events, through, _) = try await log.events(after: 3, limit: 2, scan: 2, filter: inserts)
            #expect(events.isEmpty && through == 5)
            let notes = ChangeEvent.Filter(kinds: [.object], collections: ["Note"])
            (events, through, _) = try await log.events(after: 3, limit: 10, scan: 100, filter: notes)
            #expect(events.map(\.position) == [7, 8, 11])
            #expect(events.map(\.operation) == [.insert, .update, .replace])
            (events, through, _) = try await log.events(after: 11, limit: 10, scan: 100, filter: notes)
            #expect(events.isEmpty && through == 11)
            let users = ChangeEvent.Filter(kinds: [.user])
            (events, through, _) = try await log.events(after: 0, limit: 10, scan: 100, filter: users)
            #expect(events.isEmpty && through == 11)
        }
    }

    @Test("a read with a byte budget stops at the event that reaches it, one event at least, and says it is full")
    func byteBudget() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("conversation=c-1")
            // Five inserts of bodies of about 1 kB each (stored uncompressed below 2 kB).
            for n in 1...5 {
                let text = (0..<1_000).map { _ in "abcdefghijklmnopqrstuvwxyz".randomElement()! }
                try await store.upload(Upload(partition: room, operations: [.put(key("Doc", "d\(n)"), body: ["t": .string(String(text))])], principal: "u"))
            }
            let log = EventLog(store: store)
            try await log.sequence()
            let docs = ChangeEvent.Filter(kinds: [.object], collections: ["Doc"])
            // Two events reach 2,000 bytes: the second is read, the third is not.
            var (events, through, full) = try await log.events(after: 0, limit: 10, scan: 100, bytes: 2_000, filter: docs)
            #expect(events.map(\.position) == [1, 2] && through == 2 && full)
            // A budget below one event still reads one.
            (events, through, full) = try await log.events(after: 2, limit: 10, scan: 100, bytes: 1, filter: docs)
            #expect(events.map(\.position) == [3] && through == 3 && full)
            // Under the budget and the limit: the rest, and not full.
            (events, through, full) = try await log.events(after: 3, limit: 10, scan: 100, bytes: 1 << 20, filter: docs)
            #expect(events.map(\.position) == [4, 5] && through == 5 && !full)
            // At the limit of events: full.
            (events, through, full) = try await log.events(after: 0, limit: 5, scan: 100, filter: docs)
            #expect(events.count == 5 && through == 5 && full)
        }
    }

    @Test("a byte budget counts the images as the handler gets them, as JSON text, not as stored compressed")
    func byteBudgetOfCompressedImages() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("conversation=c-1")
            // Ten records listing 1,000 alike members each (as RChat's User records list a big
            // room's members): ~60 kB of text each, stored compressed in a small part of it.
            let members = JSONValue.array((0..<1_000).map { _ in ["userName": "member@example.com", "membershipStatus": "active"] })
            for n in 1...10 {
                try await store.upload(Upload(partition: room, operations: [.put(key("Doc", "d\(n)"), body: ["members": members])], principal: "u"))
            }
            let log = EventLog(store: store)
            try await log.sequence()
            var text = 0, stored = 0
            for try await (t, s) in try await db.client.query("SELECT image_bytes, pg_column_size(after) FROM psync_events WHERE seq = 1").decode((Int, Int).self) {
                (text, stored) = (t, s)
            }
            // The premise: stored, an image is a small part of its text.
            #expect(text > 50_000 && stored * 10 < text, "text \(text) bytes, stored \(stored)")
            // A budget of four and a half images' text: five are read (the fifth reaches it), not all ten.
            let docs = ChangeEvent.Filter(kinds: [.object], collections: ["Doc"])
            let (events, through, full) = try await log.events(after: 0, limit: 100, scan: 100, bytes: text * 9 / 2, filter: docs)
            #expect(events.map(\.position) == [1, 2, 3, 4, 5] && through == 5 && full)
        }
    }

    @Test("an event records the size of its images as the server encoded them, and a read's budget sums those sizes")
    func recordedImageSizes() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("conversation=c-1")
            let doc = key("Doc", "d")
            try await store.upload(Upload(partition: room, operations: [.put(doc, body: ["t": "abc", "n": 1])], principal: "u"))
            try await store.upload(Upload(partition: room, operations: [.set(doc, path: path("n"), value: 2)], principal: "u"))
            try await store.upload(Upload(partition: room, operations: [.delete(doc)], principal: "u"))
            let log = EventLog(store: store)
            try await log.sequence()
            let events = try await log.events(after: 0, limit: 10)
            #expect(events.count == 3)
            for event in events {
                // The JSON text of each image present, as the server's serializer writes it.
                let expected = [event.before, event.after].compactMap { $0 }.reduce(0) { $0 + JSONValue.object($1).jsonBytes.count }
                let recorded = try await db.scalar("SELECT image_bytes::bigint FROM psync_events WHERE seq = \(event.position)")
                #expect(expected > 0 && recorded == Int64(expected), "event \(event.position): recorded \(recorded), encoded \(expected)")
            }
            // The read counts the recorded sizes, not the images' text: the first event made to
            // weigh a megabyte fills a budget of a kilobyte alone; made light, all three fit.
            let docs = ChangeEvent.Filter(kinds: [.object], collections: ["Doc"])
            _ = try await db.client.query("UPDATE psync_events SET image_bytes = 1000000 WHERE seq = 1", logger: db.logger)
            var read = try await log.events(after: 0, limit: 10, scan: 100, bytes: 1_000, filter: docs)
            #expect(read.events.map(\.position) == [1] && read.through == 1 && read.full)
            _ = try await db.client.query("UPDATE psync_events SET image_bytes = 1", logger: db.logger)
            read = try await log.events(after: 0, limit: 10, scan: 100, bytes: 3, filter: docs)
            #expect(read.events.map(\.position) == [1, 2, 3] && read.through == 3 && read.full)
        }
    }

    @Test("images without unchanged fields: an update or replace that leaves a field alone is read without it, every other event whole, as Images.applied says; the budget counts them as read")
    func imagesWithoutUnchanged() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("conversation=c-1")
            let doc = key("Doc", "d")
            let big = JSONValue.array((0..<200).map { .string("member-\($0)") })
            let body: [String: JSONValue] = ["big": big, "meta": ["x": 1], "other": ["y": 1], "n": 1]
            try await store.upload(Upload(partition: room, operations: [.put(doc, body: body)], principal: "u"))  // 1 insert
            try await store.upload(Upload(partition: room, operations: [.set(doc, path: path("n"), value: 2)], principal: "u"))  // 2 neither
            try await store.upload(Upload(partition: room, operations: [.set(doc, path: path("meta.x"), value: 2)], principal: "u"))  // 3 under meta
            try await store.upload(Upload(partition: room, operations: [.set(doc, path: path("big"), value: ["m"])], principal: "u"))  // 4 big
            var replaced = body
            replaced["big"] = ["m"]
            replaced["meta"] = ["x": 2]
            replaced["n"] = 3
            try await store.upload(Upload(partition: room, operations: [.put(doc, body: replaced)], principal: "u"))  // 5 replace, n
            try await store.upload(Upload(partition: room, operations: [.unset(doc, path: path("other"))], principal: "u"))  // 6 removes other
            try await store.upload(Upload(partition: room, operations: [.delete(doc)], principal: "u"))  // 7 delete
            let log = EventLog(store: store)
            try await log.sequence()
            let whole = try await log.events(after: 0, limit: 10)
            let images = ChangeEvent.Images.withoutUnchanged(["big", "meta", "other"])
            let docs = ChangeEvent.Filter(kinds: [.object], collections: ["Doc"])
            let read = try await log.events(after: 0, limit: 10, scan: 100, bytes: 1 << 20, filter: docs, images: images)
            #expect(read.events.map(\.position) == [1, 2, 3, 4, 5, 6, 7])
            for (event, full) in zip(read.events, whole) {
                let expected = images.applied(to: full)
                #expect(event.before == expected.before, "event \(event.position): \(String(describing: event.before)) against \(String(describing: expected.before))")
                #expect(event.after == expected.after, "event \(event.position): \(String(describing: event.after)) against \(String(describing: expected.after))")
            }
            // What each event's images keep of the three fields, before and after.
            func kept(_ event: ChangeEvent) -> [String] {
                ["big", "meta", "other"].filter { event.before?[$0] != nil || event.after?[$0] != nil }
            }
            #expect(read.events.map(kept) == [
                ["big", "meta", "other"], [], ["meta"], ["big"], [], ["other"], ["big", "meta"],
            ])
            #expect(read.events[1].after?["n"] == 2 && read.events[1].before?["n"] == 1, "the fields not named went missing")
            // The budget counts the images as read: without the 2 kB list, the second and third
            // events weigh a few hundred bytes, and the fourth (which changes it) is the one that
            // fills a budget of 1,000; whole, the second fills it alone.
            let light = try await log.events(after: 1, limit: 10, scan: 100, bytes: 1_000, filter: docs, images: .withoutUnchanged(["big"]))
            #expect(light.events.map(\.position) == [2, 3, 4] && light.full)
            let heavy = try await log.events(after: 1, limit: 10, scan: 100, bytes: 1_000, filter: docs)
            #expect(heavy.events.map(\.position) == [2], "whole images were counted as read without the list")
        }
    }

    @Test("an event recorded without a size (by the previous build, in a rolling upgrade) is measured as text when read")
    func eventsWithoutRecordedSize() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("conversation=c-1")
            // Three inserts of bodies of about 1 kB each.
            for n in 1...3 {
                let text = String(repeating: "abcdefghij", count: 100)
                try await store.upload(Upload(partition: room, operations: [.put(key("Doc", "d\(n)"), body: ["t": .string(text)])], principal: "u"))
            }
            let log = EventLog(store: store)
            try await log.sequence()
            _ = try await db.client.query("UPDATE psync_events SET image_bytes = NULL", logger: db.logger)
            let docs = ChangeEvent.Filter(kinds: [.object], collections: ["Doc"])
            // Two events' text reaches 2,000 bytes: the second is read, the third is not.
            let read = try await log.events(after: 0, limit: 10, scan: 100, bytes: 2_000, filter: docs)
            #expect(read.events.map(\.position) == [1, 2] && read.through == 2 && read.full)
        }
    }

    @Test("a rolled-back upload leaves no event; an upload that changes nothing leaves none")
    func noInventedEvents() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("conversation=c-1")
            _ = try? await store.upload(Upload(partition: room, operations: [.put(key("Doc", "a"), body: [:]), .set(key("Doc", "none"), path: path("x"), value: 1)], principal: "u"))
            try await store.upload(Upload(partition: room, operations: [.put(key("Doc", "b"), body: ["v": 1])], principal: "u"))
            try await store.upload(Upload(partition: room, operations: [.set(key("Doc", "b"), path: path("v"), value: 1)], principal: "u"))
            let log = EventLog(store: store)
            try await log.sequence()
            let events = try await log.events(after: 0, limit: 10)
            #expect(events.map(\.key) == [key("Doc", "b")])
        }
    }

    @Test("concurrent multi-partition writers: numbers are gapless and each partition's events follow its commit order")
    func ordering() async throws {
        try await TestDatabase.with(maximumConnections: 12) { db in
            let store = db.store()
            let rooms = (0..<4).map { partition("room=r\($0)") }
            let written = try await withThrowingTaskGroup(of: Int.self) { group in
                for writer in 0..<8 {
                    group.addTask {
                        var random = SystemRandomNumberGenerator()
                        var count = 0
                        for step in 0..<60 {
                            // Each transaction writes two or three rooms, like a trigger fanning out.
                            let chosen = rooms.shuffled(using: &random).prefix(Int.random(in: 2...3, using: &random))
                            var operations: [Partition: [SyncOperation]] = [:]
                            for room in chosen {
                                operations[room] = [.put(key("Doc", "\(room.value)-\(step % 5)"), body: ["w": .int(Int64(writer)), "s": .int(Int64(step))])]
                            }
                            try await store.withWriteTransaction(author: "w\(writer)") { transaction in
                                try await transaction.apply(operations)
                            }
                            count += operations.count
                        }
                        return count
                    }
                    group.addTask {
                        // Sequence while writers run, so passes interleave with commits.
                        for _ in 0..<20 {
                            try await EventLog(store: store).sequence(limit: 50)
                            try await Task.sleep(for: .milliseconds(5))
                        }
                        return 0
                    }
                }
                return try await group.reduce(0, +)
            }
            let log = EventLog(store: store)
            while try await log.sequence() != nil {}
            let events = try await log.events(after: 0, limit: 100_000)
            #expect(events.map(\.position) == Array(1...Int64(events.count)))
            for room in rooms {
                let versions = events.filter { $0.partition == room }.compactMap(\.version)
                #expect(zip(versions, versions.dropFirst()).allSatisfy { $0 < $1 }, "\(room) out of commit order")
            }
            #expect(events.count == written)
            let objectChanges = try await db.client.query("SELECT count(*) FROM psync_events WHERE seq IS NULL")
            for try await unsequenced in objectChanges.decode(Int.self) { #expect(unsequenced == 0) }
        }
    }
}

@Suite("Event retention", .timeLimit(.minutes(30)))
struct EventRetentionTests {
    @Test("events are pruned once every trigger has passed them, except those of open dead letters")
    func pruning() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let room = partition("room=r")
            for n in 0..<6 {
                try await store.upload(Upload(partition: room, operations: [.put(key("Doc", "d\(n)"), body: [:])], principal: "u"))
            }
            let log = EventLog(store: store)
            try await log.sequence()
            let ledger = TriggerLedger(store: store)
            // A trigger that has passed three events, and a dead letter on the second.
            try await db.client.query("INSERT INTO psync_triggers (name, position) VALUES ('t', 3)")
            try await db.client.query("INSERT INTO psync_dead_letters (trigger, seq, attempts, error) VALUES ('t', 2, 1, 'x')")
            #expect(try await store.pruneEvents(olderThan: .zero) == 2)
            #expect(try await log.events(after: 0, limit: 10).map(\.position) == [2, 4, 5, 6])
            #expect(try await ledger.deadLetters().count == 1)
        }
    }
}
