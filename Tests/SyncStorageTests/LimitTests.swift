import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// Bad input through the storage engine: each gets its typed error and nothing is written.
@Suite("Limits and bad input", .timeLimit(.minutes(30)))
struct LimitTests {
    let room = partition("conversation=c-1")

    @Test("oversized bodies, deep JSON and too many operations are refused with their codes")
    func limits() async throws {
        try await TestDatabase.with { db in
            let store = db.store(StorageConfiguration(limits: Limits(maximumBodyBytes: 1_000, maximumDepth: 4, maximumOperations: 10)))
            let doc = key("Doc", "d")
            let big: [String: JSONValue] = ["text": .string(String(repeating: "x", count: 1_000))]
            #expect(await errorCode { try await store.apply([.put(doc, body: big)], in: room) } == .payloadTooLarge)
            // Growing past the limit by small steps is refused too.
            try await store.apply([.put(doc, body: ["list": []])], in: room)
            let appends = (0..<9).map { _ in SyncOperation.arrayAppend(doc, path: path("list"), value: .string(String(repeating: "y", count: 120))) }
            #expect(await errorCode { try await store.apply(appends, in: room) } == .payloadTooLarge)
            #expect(await errorCode { try await store.apply([.set(doc, path: path("a.b.c.d.e"), value: 1)], in: room) } == .jsonTooDeep)
            #expect(await errorCode { try await store.apply([.set(doc, path: path("a"), value: [[[[1]]]])], in: room) } == .jsonTooDeep)
            let many = (0..<11).map { SyncOperation.put(key("Doc", "m\($0)"), body: [:]) }
            #expect(await errorCode { try await store.apply(many, in: room) } == .tooManyOperations)
            #expect(try await store.body(of: doc) == ["_id": "d", "partition": "conversation=c-1", "list": []])
            #expect(try await store.headVersion(of: room) == 1)
        }
    }

    @Test("the default limits: 1 MiB bodies, depth 32, 1,000 operations")
    func defaults() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let doc = key("Doc", "d")
            let almost = (1 << 20) - 100
            try await store.apply([.put(doc, body: ["s": .string(String(repeating: "x", count: almost))])], in: room)
            #expect(await errorCode { try await store.apply([.put(doc, body: ["s": .string(String(repeating: "x", count: 1 << 20))])], in: room) } == .payloadTooLarge)
            let nested = key("Doc", "nested")
            var deep: JSONValue = 1
            for _ in 0..<31 { deep = ["d": deep] }
            try await store.apply([.put(nested, body: ["d": deep])], in: room)
            #expect(await errorCode { try await store.apply([.put(nested, body: ["d": ["d": deep]])], in: room) } == .jsonTooDeep)
            let thousand = (0..<1_000).map { SyncOperation.put(key("Doc", "k\($0)"), body: [:]) }
            try await store.apply(thousand, in: room)
            #expect(await errorCode { try await store.apply(thousand + [.delete(doc)], in: room) } == .tooManyOperations)
        }
    }

    @Test("bad partitions, collections, ids and paths have their own codes")
    func identifiers() async throws {
        #expect(await errorCode { try Partition("no equals") } == .invalidPartition)
        #expect(await errorCode { try ObjectKey(collection: "bad-name", id: "x") } == .invalidCollection)
        #expect(await errorCode { try ObjectKey(collection: "Good", id: "") } == .invalidObjectID)
        #expect(await errorCode { try Path(parsing: "a..b") } == .invalidPath)
        let wire: JSONValue = ["op": "set", "collection": "Doc", "id": "d", "path": "a[", "value": 1]
        #expect(await errorCode { try SyncOperation(json: wire) } == .invalidPath)
    }

    @Test("strings holding U+0000, which PostgreSQL cannot store, are refused cleanly")
    func nulCharacters() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let code = await errorCode { try await store.apply([.put(key("Doc", "d"), body: ["s": "a\u{0}b"])], in: room) }
            #expect(code == .invalidOperation)
            let head = try await store.headVersion(of: room)
            #expect(head == 0)
        }
    }
}
