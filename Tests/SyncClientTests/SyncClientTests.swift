import Foundation
import PartitionSync

#if canImport(Glibc)
import Glibc
#endif
import RChat
import SyncClient
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

@Suite("Client SDK", .timeLimit(.minutes(30)))
struct SyncClientTests {
    @Test("a write shows at once, is uploaded, acknowledged and confirmed by the server's copy")
    func optimisticWrite() async throws {
        try await ClientHarness.withAnn { db, client, userID in
            let mine = try await client.open(partition("user=\(userID)"))
            #expect(await client.waitUntilUpToDate(mine.partition, timeout: .seconds(10)))
            try await mine.write([.put(key("Note", "n"), body: ["text": "hello"])])
            let local = try await mine.objects()
            #expect(local.first?.body?["text"] == "hello")
            #expect(await client.waitUntilUploaded(timeout: .seconds(10)))
            #expect(try await db.store().body(of: key("Note", "n"))?["text"] == "hello")
            // Confirmed: the server's batch carried it, nothing is pending.
            var confirmed = false
            for await snapshot in await mine.updates() where snapshot.pendingWrites == 0 && snapshot.objects.first?.version ?? 0 > 0 {
                confirmed = true
                break
            }
            #expect(confirmed)
            // A write the local copy already knows to fail is refused at once.
            await #expect(throws: SyncError.self) {
                try await mine.write([.set(key("Note", "missing"), path: path("x"), value: 1)])
            }
        }
    }

    @Test("opening an open partition again does not subscribe again: the server does not start its catch-up over")
    func openTwice() async throws {
        try await ClientHarness.withAnn { db, client, userID in
            let mine = try await client.open(partition("user=\(userID)"))
            #expect(await client.waitUntilUpToDate(mine.partition, timeout: .seconds(10)))
            _ = try await client.open(mine.partition)
            _ = try await client.open(mine.partition)
            // A change from elsewhere arrives live, after anything the opens caused.
            try await db.store().upload(Upload(partition: mine.partition, operations: [.put(key("Note", "later"), body: [:])], principal: userID))
            #expect(try await TestTriggers.eventually { try await client.objects(in: mine.partition).contains { $0.key == key("Note", "later") } })
            // One catch-up page (the first open's) and the change: no page of a catch-up begun again.
            let pages = await client.receivedBatches().filter { $0.partition == mine.partition }
            #expect(pages.count == 2, "\(pages)")
        }
    }

    @Test("a write whose upload the server could never take is refused at once, never queued")
    func oversizedWrite() async throws {
        try await ClientHarness.withAnn { _, client, userID in
            let mine = partition("user=\(userID)")
            let text = JSONValue.string(String(repeating: "x", count: 900_000))
            let operations = (0..<20).map { SyncOperation.put(key("Note", "n\($0)"), body: ["text": text]) }
            do {
                _ = try await client.write(operations, in: mine)
                Issue.record("an upload of 18 MB was queued")
            } catch let error as SyncError {
                #expect(error.code == .payloadTooLarge)
            }
            #expect(try await client.unacknowledgedWrites() == 0)
            // A write within the limit still goes.
            _ = try await client.write(Array(operations.prefix(3)), in: mine)
            #expect(await client.waitUntilUploaded(timeout: .seconds(30)))
        }
    }

    @Test("writes queued while the server is stopped are delivered exactly once after it restarts")
    func offlineQueue() async throws {
        try await ClientHarness.withSignedInUser { ann in
            let (server, client, mine, userKey) = (ann.server, ann.client, ann.partition, ann.userKey)
            // A room of her own, whose unread count the increments raise (RChat's User record
            // takes no field outside its model).
            let room: JSONValue = ["id": "c-count", "displayName": "Count", "unreadCount": 0, "members": []]
            try await client.write([.arrayAppend(userKey, path: path("conversations"), value: room)], in: mine)
            #expect(await client.waitUntilUploaded(timeout: .seconds(30)))
            let count = path("conversations[id=c-count].unreadCount")
            func counted(_ body: [String: JSONValue]?) -> Int64? {
                body?["conversations"]?.arrayValue?.first { $0["id"] == "c-count" }?["unreadCount"]?.intValue
            }
            await server.kill()
            #expect(await client.waitUntilOffline(timeout: .seconds(10)))
            for _ in 0..<10 {
                try await client.write([.increment(userKey, path: count, by: 1)], in: mine)
            }
            // Offline, the local copy already shows them.
            #expect(counted(try await client.objects(in: mine).first?.body) == 10)
            #expect(try await client.unacknowledgedWrites() == 10)
            try await server.start()
            #expect(await client.waitUntilUploaded(timeout: .seconds(30)))
            #expect(counted(try await ann.database.store().body(of: userKey)) == 10)
        }
    }

    @Test("a server that stops answering is found out by the ping; the client reconnects when it answers again")
    func deadConnection() async throws {
        try await ClientHarness.withSignedInUser(pingInterval: .milliseconds(300), pongTimeout: .milliseconds(700)) { ann in
            let (server, client, mine, userKey) = (ann.server, ann.client, ann.partition, ann.userKey)
            // The process freezes: its sockets stay open, nothing answers, no close comes.
            let pid = try #require(server.processIdentifier)
            kill(pid, SIGSTOP)
            #expect(await client.waitUntilOffline(timeout: .seconds(10)))
            try await client.write([.set(userKey, path: path("userPreferences.displayName"), value: "written while frozen")], in: mine)
            kill(pid, SIGCONT)
            #expect(await client.waitUntilOnline(timeout: .seconds(20)))
            #expect(await client.waitUntilUploaded(timeout: .seconds(20)))
            #expect(await client.waitUntilUpToDate(mine, timeout: .seconds(10)))
            #expect(try await ann.database.store().body(of: userKey)?["userPreferences"]?["displayName"] == "written while frozen")
        }
    }


    @Test("a client restarted from its store shows its data offline and then downloads only what changed")
    func resumeFromStore() async throws {
        let harness = ClientHarness()
        defer { harness.cleanUp() }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: SharedRules.permissions) { server in
                let room = partition("shared=room")
                let first = try harness.client(server.baseURL)
                try await first.register(email: "ann@example.com", password: "correct horse")
                let store = db.store()
                for n in 0..<20 {
                    try await store.upload(Upload(partition: room, operations: [.put(key("Doc", "d\(n)"), body: [:])], principal: "seed"))
                }
                try await ClientHarness.running(first) {
                    _ = try await first.open(room)
                    #expect(await first.waitUntilUpToDate(room, timeout: .seconds(10)))
                }
                // While the app is closed: one change, one deletion, one new object.
                try await store.upload(Upload(partition: room, operations: [.set(key("Doc", "d1"), path: path("edited"), value: true)], principal: "seed"))
                try await store.upload(Upload(partition: room, operations: [.delete(key("Doc", "d2"))], principal: "seed"))
                try await store.upload(Upload(partition: room, operations: [.put(key("Doc", "new"), body: [:])], principal: "seed"))

                let second = try harness.client(server.baseURL)
                #expect(try await second.objects(in: room).count == 20)  // offline, from the store
                try await ClientHarness.running(second) {
                    #expect(await second.waitUntilUpToDate(room, timeout: .seconds(10)))
                    let batches = await second.receivedBatches().filter { $0.partition == room }
                    #expect(!batches.contains { $0.reset })
                    #expect(Set(batches.flatMap(\.keys)) == [key("Doc", "d1"), key("Doc", "d2"), key("Doc", "new")])
                    let objects = try await second.objects(in: room)
                    #expect(objects.count == 20)
                    #expect(objects.first { $0.key == key("Doc", "d1") }?.body?["edited"] == true)
                    #expect(!objects.contains { $0.key == key("Doc", "d2") })
                }
            }
        }
    }

    @Test("a refused write is reverted locally and reported")
    func rejectedWrite() async throws {
        let harness = ClientHarness()
        defer { harness.cleanUp() }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, application: RChat.application) { server in
                let client = try harness.client(server.baseURL)
                let userID = try await client.register(email: "ann@example.com", password: "correct horse")
                let mine = partition("user=\(userID)")
                let events = await client.events()
                try await ClientHarness.running(client) {
                    let handle = try await client.open(mine)
                    // Wait for the User record the registration trigger makes.
                    for await snapshot in await handle.updates() where !snapshot.objects.isEmpty { break }
                    let userKey = key("User", userID)
                    // Renaming oneself is refused by RChat's validator.
                    let requestId = try await handle.write([.set(userKey, path: path("userName"), value: "mallory@example.com")])
                    #expect(try await handle.objects().first?.body?["userName"] == "mallory@example.com")
                    var reported: SyncError?
                    for await event in events {
                        if case .rejected(let id, _, let error) = event, id == requestId {
                            reported = error
                            break
                        }
                    }
                    #expect(reported?.code == .validationFailed)
                    #expect(try await handle.objects().first?.body?["userName"] == "ann@example.com")
                    #expect(try await client.unacknowledgedWrites() == 0)
                }
            }
        }
    }

    @Test("a reset replaces the partition's copy and keeps the pending writes on top")
    func resetKeepsPendingWrites() async throws {
        try await ClientHarness.withSignedInUser { ann in
            let (server, client, mine, userKey) = (ann.server, ann.client, ann.partition, ann.userKey)
            let store = ann.database.store()
            await server.kill()
            #expect(await client.waitUntilOffline(timeout: .seconds(10)))
            try await client.write([.set(userKey, path: path("userPreferences.displayName"), value: "Ann")], in: mine)
            // The database is restored elsewhere: its epoch changes, so the client's cursor is
            // foreign; and the record changed meanwhile.
            try await store.renewEpoch()
            try await store.upload(Upload(partition: mine, operations: [.set(userKey, path: path("note"), value: "from the server")], principal: "system:test"))
            try await server.start()
            #expect(await client.waitUntilUploaded(timeout: .seconds(30)))
            #expect(await client.waitUntilUpToDate(mine, timeout: .seconds(10)))
            #expect(await client.receivedBatches().contains { $0.partition == mine && $0.reset })
            let body = try await client.objects(in: mine).first?.body
            #expect(body?["note"] == "from the server")
            #expect(body?["userPreferences"]?["displayName"] == "Ann")
            let stored = try await store.body(of: userKey)
            #expect(stored?["userPreferences"]?["displayName"] == "Ann")
            #expect(stored?["note"] == "from the server")
        }
    }
}
