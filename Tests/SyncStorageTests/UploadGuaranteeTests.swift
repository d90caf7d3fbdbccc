import PostgresNIO
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// Atomicity, idempotency and concurrency of uploads.
@Suite("Upload guarantees", .timeLimit(.minutes(30)))
struct UploadGuaranteeTests {
    let room = partition("conversation=c-1")

    @Test("a batch whose last operation is invalid leaves no trace")
    func atomicity() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            var operations: [SyncOperation] = (0..<50).map { .put(key("ChatMessage", "m-\($0)"), body: ["text": .string("hi \($0)")]) }
            operations.append(.set(key("ChatMessage", "m-3"), path: path("text.bad"), value: 1))
            let code = await errorCode {
                try await store.upload(Upload(partition: room, operations: operations, principal: "u1", requestId: "r-1"))
            }
            #expect(code == .typeMismatch)
            #expect(try await store.headVersion(of: room) == 0)
            #expect(try await store.objects(operations.map(\.key)).isEmpty)
            let rows = try await db.client.query("SELECT count(*) FROM psync_objects", logger: db.logger)
            for try await count in rows.decode(Int.self) { #expect(count == 0) }
        }
    }

    @Test("the same (principal, requestId) twice applies once and returns the first result")
    func idempotentRepeat() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let counter = key("Counter", "c")
            let upload = Upload(
                partition: room, operations: [.put(counter, body: [:]), .increment(counter, path: path("n"), by: 1)],
                principal: "u1", requestId: "r-1")
            let first = try await store.upload(upload)
            let second = try await store.upload(upload)
            #expect(!first.isReplay)
            #expect(second.isReplay)
            #expect(second.version == first.version)
            #expect(second.cursor == first.cursor)
            #expect(try await store.body(of: counter)?["n"] == 1)
            #expect(try await store.headVersion(of: room) == first.version)
            // Another principal's identical request id is its own request.
            var other = upload
            other.principal = "u2"
            other.operations = [.increment(counter, path: path("n"), by: 1)]
            #expect(try await store.upload(other).isReplay == false)
            #expect(try await store.body(of: counter)?["n"] == 2)
            // Reusing a request id for another partition is refused.
            var elsewhere = upload
            elsewhere.partition = partition("conversation=c-2")
            #expect(await errorCode { try await store.upload(elsewhere) } == .badRequest)
        }
    }

    @Test("identical uploads arriving at once apply exactly once")
    func concurrentRepeats() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let counter = key("Counter", "c")
            try await store.apply([.put(counter, body: ["n": 0])], in: room)
            let upload = Upload(partition: room, operations: [.increment(counter, path: path("n"), by: 1)], principal: "u1", requestId: "same")
            let results = try await withThrowingTaskGroup(of: UploadResult.self) { group in
                for _ in 0..<12 { group.addTask { try await store.upload(upload) } }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.filter { !$0.isReplay }.count == 1)
            #expect(Set(results.map(\.version)).count == 1)
            #expect(try await store.body(of: counter)?["n"] == 1)
        }
    }

    @Test("a rejected upload repeated returns the same rejection even when it would now succeed")
    func rejectedRepeat() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let note = key("Note", "n")
            let upload = Upload(partition: room, operations: [.set(note, path: path("x"), value: 1)], principal: "u1", requestId: "r-9")
            #expect(await errorCode { try await store.upload(upload) } == .notFound)
            try await store.apply([.put(note, body: [:])], in: room)
            #expect(await errorCode { try await store.upload(upload) } == .notFound)
            #expect(try await store.body(of: note)?["x"] == nil)
        }
    }

    @Test("request ids are checked")
    func requestIDs() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            for bad in ["", String(repeating: "r", count: 257), "a\nb"] {
                let upload = Upload(partition: room, operations: [.put(key("N", "n"), body: [:])], principal: "u", requestId: bad)
                #expect(await errorCode { try await store.upload(upload) } == .badRequest)
            }
        }
    }

    @Test("concurrent increments from many tasks sum exactly")
    func concurrentIncrements() async throws {
        try await TestDatabase.with(maximumConnections: 16) { db in
            let store = db.store()
            let counter = key("Counter", "c")
            try await store.apply([.put(counter, body: ["n": 0, "f": 0.0])], in: room)
            let tasks = 40
            let perTask = 25
            try await withThrowingTaskGroup(of: Void.self) { group in
                for task in 0..<tasks {
                    group.addTask {
                        for step in 0..<perTask {
                            try await store.upload(Upload(
                                partition: room,
                                operations: [.increment(counter, path: path("n"), by: 1), .increment(counter, path: path("f"), by: 0.5)],
                                principal: "u\(task)", requestId: "r-\(step)"))
                        }
                    }
                }
                try await group.waitForAll()
            }
            let body = try await store.body(of: counter)
            #expect(body?["n"] == .int(Int64(tasks * perTask)))
            #expect(body?["f"]?.doubleValue == Double(tasks * perTask) * 0.5)
            #expect(try await store.headVersion(of: room) == Int64(tasks * perTask + 1))
        }
    }

    @Test("concurrent writers to different fields of one object keep each other's changes")
    func concurrentFields() async throws {
        try await TestDatabase.with(maximumConnections: 16) { db in
            let store = db.store()
            let record = key("Profile", "p")
            try await store.apply([.put(record, body: [:])], in: room)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for field in 0..<30 {
                    group.addTask {
                        try await store.apply([.set(record, path: path("f\(field).value"), value: .int(Int64(field)))], in: room)
                        try await store.apply([.arrayAppend(record, path: path("log"), value: .int(Int64(field)))], in: room)
                    }
                }
                try await group.waitForAll()
            }
            let body = try #require(try await store.body(of: record))
            for field in 0..<30 { #expect(body["f\(field)"] == ["value": .int(Int64(field))]) }
            #expect(Set(body["log"]?.arrayValue ?? []) == Set((0..<30).map { JSONValue.int(Int64($0)) }))
        }
    }

    @Test("writers to different partitions do not wait for each other")
    func independentPartitions() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let a = partition("user=a")
            let b = partition("user=b")
            let blocker = key("Doc", "a")
            try await store.apply([.put(blocker, body: [:])], in: a)
            // Hold partition a's lock in an open transaction, then write to b.
            let holding = AsyncStream<Void>.makeStream()
            let release = AsyncStream<Void>.makeStream()
            async let held: Void = store.withWriteTransaction(author: "holder") { transaction in
                try await transaction.apply([.set(blocker, path: path("x"), value: 1)], in: a)
                holding.continuation.yield()
                for await _ in release.stream { break }
            }
            for await _ in holding.stream { break }
            // Were b's write to wait for a's lock it would never finish: a is released only after it.
            try await store.apply([.put(key("Doc", "b"), body: [:])], in: b)
            release.continuation.yield()
            try await held
            #expect(try await store.body(of: blocker)?["x"] == 1)
        }
    }
}
