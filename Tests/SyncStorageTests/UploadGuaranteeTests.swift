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

    @Test("the lock an upload's transaction sends behind its unanswered BEGIN refuses to run outside that transaction, leaving nothing")
    func lockOutsideItsTransaction() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            try await store.upload(Upload(partition: room, operations: [.put(key("ChatMessage", "m-1"), body: [:])], principal: "u1"))
            #expect(try await store.headVersion(of: room) == 1)
            try await db.client.withConnection { connection in
                // What a connection runs next when the BEGIN before it failed: the statement on
                // its own; and behind a BEGIN that is not a write transaction's.
                for begin in [nil, "BEGIN"] as [PostgresQuery?] {
                    if let begin { try await connection.query(begin, logger: db.logger) }
                    await #expect {
                        let rows = try await connection.query(
                            "SELECT count(*) FROM psync_lock_read_begun(\([room.description]), \([String]()), \([String]()), NULL)",
                            logger: db.logger)
                        for try await _ in rows {}
                    } throws: { error in
                        (error as? PSQLError)?.serverInfo?[.sqlState] == "25P01"
                    }
                    if begin != nil { try await connection.query("ROLLBACK", logger: db.logger) }
                }
            }
            // Nothing committed: the partition's version was not taken.
            #expect(try await store.headVersion(of: room) == 1)
            // The uploads that follow take it as before.
            try await store.upload(Upload(partition: room, operations: [.put(key("ChatMessage", "m-2"), body: [:])], principal: "u1"))
            #expect(try await store.headVersion(of: room) == 2)
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

    /// A sequence of uploads of every kind: puts of objects that exist (with equal and other
    /// bodies), of a key stored in another partition, a refusal that depends on whether an
    /// object exists, repeats of request ids, and the other operations.
    static func script(_ store: ObjectStore) async throws -> [String] {
        let room = partition("room=a")
        let other = partition("room=b")
        // Refuses to create objects named "guarded" (but lets them be changed).
        let guardCreation: ObjectStore.Validator = { changes, _ in
            if changes.contains(where: { $0.key.id == "guarded" && $0.before.body == nil }) {
                throw SyncError(.validationFailed, "guarded objects are not created by clients")
            }
        }
        var outcomes: [String] = []
        func run(_ id: String, _ partition: Partition, _ operations: [SyncOperation], validate: ObjectStore.Validator? = nil) async throws {
            do {
                let result = try await store.upload(Upload(partition: partition, operations: operations, principal: "p", requestId: id), validate: validate)
                outcomes.append("\(id): v\(result.version) replay \(result.isReplay) \(result.changes.map { "\($0.key.id) \($0.before.body == nil ? "new" : "old")" })")
            } catch let error as SyncError {
                outcomes.append("\(id): \(error.code)")
            }
        }
        try await run("1", room, [.put(key("Doc", "x"), body: ["n": 1])])
        try await run("2", room, [.put(key("Doc", "x"), body: ["n": 2])])  // exists: an update
        try await run("3", room, [.put(key("Doc", "x"), body: ["n": 2])])  // the same body: no change
        try await run("4", other, [.put(key("Doc", "x"), body: ["n": 3])])  // stored in room=a
        try await run("5", room, [.increment(key("Doc", "x"), path: path("n"), by: 5), .put(key("Doc", "y"), body: [:])])
        try await run("6", room, [.put(key("Doc", "guarded"), body: ["v": 1])], validate: guardCreation)  // refused: new
        _ = try await store.apply([.put(key("Doc", "guarded"), body: ["v": 1])], in: room, principal: "server")
        try await run("7", room, [.put(key("Doc", "guarded"), body: ["v": 2])], validate: guardCreation)  // accepted: exists
        try await run("2", room, [.put(key("Doc", "never"), body: [:])])  // a repeat: the first outcome
        try await run("6", room, [.put(key("Doc", "never"), body: [:])])  // a repeated refusal
        try await run("8", room, [.delete(key("Doc", "y"))])
        try await run("9", room, [.put(key("Doc", "y"), body: ["back": true])])  // over a tombstone
        let batch = try await store.upload(batch: [
            Upload(partition: room, operations: [.put(key("Doc", "z"), body: [:])], principal: "p", requestId: "10"),
            Upload(partition: other, operations: [.put(key("Doc", "x"), body: [:])], principal: "p", requestId: "11"),
            Upload(partition: other, operations: [.put(key("Doc", "w"), body: ["n": 1])], principal: "p", requestId: "12"),
        ])
        outcomes += batch.map { result in
            switch result {
            case .success(let result): "batch: v\(result.version) \(result.changes.map(\.key.id))"
            case .failure(let error): "batch: \(error.code)"
            }
        }
        return outcomes
    }

    /// Every object and event row, as text, in a stable order.
    static func contents(_ db: TestDatabase) async throws -> [String] {
        var lines: [String] = []
        let objects = try await db.client.query(
            "SELECT partition || ' ' || collection || '/' || id || ' v' || version || ' ' || coalesce(body::text, 'deleted') FROM psync_objects ORDER BY 1",
            logger: db.logger)
        for try await line in objects.decode(String.self) { lines.append(line) }
        let events = try await db.client.query(
            """
            SELECT concat_ws(' ', operation, partition, object_id, version, before::text, after::text, changed::text, removed::text, author)
            FROM psync_events ORDER BY id
            """, logger: db.logger)
        for try await line in events.decode(String.self) { lines.append(line) }
        let outcomes = try await db.client.query(
            "SELECT request_id || ' ' || partition || ' ' || outcome::text FROM psync_requests ORDER BY 1", logger: db.logger)
        for try await line in outcomes.decode(String.self) { lines.append(line) }
        return lines
    }

    @Test("an upload whose connection dies after its statement's rows but before the commit is never reported applied without being stored")
    func connectionLostBeforeCommit() async throws {
        do {
            try await TestDatabase.with { db in
                // A deferred constraint trigger runs at the commit, after the statement that wrote
                // the object has returned all its rows: it waits there, and the test ends the
                // backend meanwhile, as a database stopped at that moment would.
                for sql in [
                    "CREATE FUNCTION stall_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(3); RETURN NULL; END $$",
                    """
                    CREATE CONSTRAINT TRIGGER stall_commit AFTER INSERT ON psync_objects DEFERRABLE INITIALLY DEFERRED
                    FOR EACH ROW WHEN (NEW.id = 'stalled') EXECUTE FUNCTION stall_commit()
                    """,
                ] {
                    try await db.client.query(PostgresQuery(unsafeSQL: sql), logger: db.logger)
                }
                let store = db.store()
                let room = partition("room=a")
                let upload = Upload(partition: room, operations: [.put(key("Doc", "stalled"), body: [:])], principal: "p", requestId: "r1")
                let applying = Task { try? await store.upload(upload) }
                // The first backend found waiting in the commit is ended.
                let terminate = """
                    SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
                    WHERE datname = current_database() AND wait_event = 'PgSleep'
                    """
                let deadline = ContinuousClock.now + .seconds(30)
                while try await db.scalar(terminate) == 0, ContinuousClock.now < deadline {
                    try await Task.sleep(for: .milliseconds(20))
                }
                let applied = await applying.value
                let stored = try await store.body(of: key("Doc", "stalled")) != nil
                // Reported applied only if it is there (a retry may have stored it after all).
                #expect(applied == nil || stored, "reported applied at version \(applied?.version ?? 0), not stored")
            }
        }
    }

    @Test("a script of puts over stored objects, keys of other partitions, refusals and repeats: the answers, objects, events and outcomes")
    func scriptedAnswers() async throws {
        let (outcomes, contents) = try await TestDatabase.with { db in
            let store = db.store()
            return (try await Self.script(store), try await Self.contents(db))
        }
        #expect(outcomes.contains("2: v2 replay false [\"x old\"]"))
        #expect(outcomes.contains("3: v3 replay false []"))
        #expect(outcomes.contains("4: partition_mismatch"))
        #expect(outcomes.contains("6: validation_failed"))
        #expect(outcomes.contains { $0.hasPrefix("7: ") && $0.contains("guarded old") })
        #expect(outcomes.contains { $0.hasPrefix("2: ") && $0.contains("replay true") })
        #expect(outcomes.suffix(3) == ["batch: v9 [\"z\"]", "batch: partition_mismatch", "batch: v1 [\"w\"]"])
        // Nothing of a refused upload is stored; every refusal's outcome is.
        #expect(!contents.contains { $0.hasPrefix("room=b Doc/x") })
        #expect(contents.contains { $0.hasPrefix("6 room=a") && $0.contains("validation_failed") })
        #expect(contents.contains { $0.hasPrefix("4 room=b") && $0.contains("partition_mismatch") })
    }

    @Test("many writers putting and changing the same objects at once: every change counted once, none lost")
    func contention() async throws {
        try await TestDatabase.with(maximumConnections: 12) { db in
            let store = db.store()
            let room = partition("room=busy")
            let writers = 8
            let rounds = 40
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        for round in 0..<rounds {
                            // A put of a shared object (new only for the first writer to get
                            // there), an increment of it, and a new object of the writer's own.
                            _ = try await store.upload(Upload(
                                partition: room,
                                operations: [
                                    .put(key("Doc", "own-\(writer)-\(round)"), body: ["w": .int(Int64(writer))]),
                                ], principal: "w\(writer)", requestId: "own-\(round)"))
                            _ = try await store.upload(Upload(
                                partition: room,
                                operations: round == 0 ? [.put(key("Counter", "c\(writer % 2)"), body: ["n": 0])]
                                    : [.increment(key("Counter", "c\(writer % 2)"), path: path("n"), by: 1)],
                                principal: "w\(writer)", requestId: "count-\(round)"))
                        }
                    }
                }
                try await group.waitForAll()
            }
            // Each counter was put (reset to 0) by each of its writers in their first round,
            // then raised once per later round: at least (rounds - 1) per writer after the
            // last reset, and every change of it has an event in commit order.
            let rows = try await db.client.query(
                """
                SELECT object_id, version, (after->>'n')::bigint, operation FROM psync_events
                WHERE collection = 'Counter' ORDER BY version, id
                """, logger: db.logger)
            var last: [String: Int64] = [:]
            var versions: [String: Int64] = [:]
            for try await (id, version, n, operation) in rows.decode((String, Int64, Int64, String).self) {
                #expect(version > versions[id, default: 0], "each change of \(id) has a version of its own, in order")
                if operation == "update" { #expect(n == last[id, default: 0] + 1, "\(id) raised from what the previous change left") }
                versions[id] = version
                last[id] = n
            }
            for counter in ["c0", "c1"] {
                let stored = try await store.body(of: key("Counter", counter))?["n"]?.intValue
                #expect(stored == last[counter])
            }
            let own = try await db.client.query("SELECT count(*) FROM psync_objects WHERE id LIKE 'own-%'", logger: db.logger)
            for try await count in own.decode(Int64.self) { #expect(count == Int64(writers * rounds)) }
        }
    }
}
