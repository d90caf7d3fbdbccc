import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// The permission matrix with a small rule set (see `TestRules`).
@Suite("Permissions", .timeLimit(.minutes(30)))
struct PermissionTests {
    @Test("who may subscribe and upload where")
    func matrix() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { server in
                let alice = try await server.register("alice@example.com")
                let bob = try await server.register("bob@example.com")
                let store = db.store()
                // Alice is a member of room r1, bob of nothing.
                try await store.upload(Upload(
                    partition: partition("user=\(alice.userID)"),
                    operations: [.put(key("Profile", alice.userID), body: ["rooms": ["r1"]])], principal: "setup"))
                let client = try await server.connect(token: bob.accessToken)
                _ = try await client.next()
                let cases: [(String, Bool)] = [
                    ("user=\(bob.userID)", true), ("user=\(alice.userID)", false), ("room=r1", false),
                    ("notice=all", true), ("unknown=thing", false), ("User=bad", false),
                ]
                for (text, allowed) in cases {
                    guard let target = try? Partition(text) else {
                        client.send(text: #"{"type":"subscribe","partition":"\#(text)","cursor":null}"#)
                        guard case .error(let error, _) = try await client.next() else { Issue.record("no error for \(text)"); continue }
                        #expect(error.code == .invalidPartition)
                        continue
                    }
                    client.send(.subscribe(partition: target, cursor: nil))
                    let answer = try await client.next()
                    if allowed {
                        guard case .changes(let batch) = answer else { Issue.record("\(text): \(answer)"); continue }
                        #expect(batch.partition == target)
                    } else {
                        #expect(answer == .error(SyncError(.permissionDenied, "you may not read \(target)"), partition: target), "\(text)")
                    }
                }
                // Uploads: own partition yes; alice's, a room bob is not in, read-only notices, unknown keys: no.
                #expect(try await client.upload([.put(key("Note", "b"), body: [:])], to: partition("user=\(bob.userID)"), requestId: "u1").isAck)
                for (index, text) in ["user=\(alice.userID)", "room=r1", "notice=all", "unknown=thing"].enumerated() {
                    let answer = try await client.upload([.put(key("Note", "x\(index)"), body: [:])], to: partition(text), requestId: "d\(index)")
                    guard case .rejected(_, _, let error, let objects) = answer else { Issue.record("\(text): \(answer)"); continue }
                    #expect(error.code == .permissionDenied)
                    #expect(objects.map(\.isDeleted) == [true])
                }
                #expect(try await store.body(of: key("Note", "x0")) == nil)
                await client.close()

                // A service with an API key writes the notices; a user cannot.
                let apiKey = try await APIKeys(client: db.client, logger: db.logger).create(name: "notifier")
                let notifier = try await server.connect(token: apiKey)
                #expect(try await notifier.next() == .ready(userId: "service:notifier"))
                #expect(try await notifier.upload([.put(key("Notice", "n1"), body: ["text": "maintenance"])], to: partition("notice=all"), requestId: "n1").isAck)
                await notifier.close()
            }
        }
    }

    @Test("losing read access ends the open subscription with permission_revoked, and later writes are refused")
    func revocation() async throws {
        try await TestDatabase.with(exclusive: true) { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { server in
                let alice = try await server.register("alice@example.com")
                let mine = partition("user=\(alice.userID)")
                let room = partition("room=r1")
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                // She joins the room by writing her own profile, as an RChat client would.
                #expect(try await client.upload([.put(key("Profile", alice.userID), body: ["rooms": ["r1"]])], to: mine, requestId: "join").isAck)
                client.send(.subscribe(partition: room, cursor: nil))
                var copy = PartitionCopy()
                try await client.sync(room, into: &copy)
                #expect(try await client.upload([.put(key("Message", "m1"), body: ["text": "hello"])], to: room, requestId: "m1").isAck)
                // Someone else (a back end) removes her from the room.
                try await db.store().upload(Upload(
                    partition: mine, operations: [.arrayRemove(key("Profile", alice.userID), path: try Path(parsing: "rooms"), match: "r1")],
                    principal: "system:admin"))
                let ended = try await client.next(timeout: .seconds(5)) { message in
                    if case .unsubscribed = message { return true }
                    return false
                }
                #expect(ended == .unsubscribed(partition: room, code: .permissionRevoked))
                let refused = try await client.upload([.put(key("Message", "m2"), body: ["text": "still here?"])], to: room, requestId: "m2")
                guard case .rejected(_, _, let error, _) = refused else { Issue.record("\(refused)"); return }
                #expect(error.code == .permissionDenied)
                // Joining again makes the room readable again.
                #expect(try await client.upload([.arrayAppend(key("Profile", alice.userID), path: try Path(parsing: "rooms"), value: "r1")], to: mine, requestId: "rejoin").isAck)
                client.send(.subscribe(partition: room, cursor: copy.cursor))
                try await client.sync(room, into: &copy)
                #expect(copy.objects.keys.contains(key("Message", "m1")))
                await client.close()
            }
        }
    }
}
