import Foundation
import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// An object whose `@expiresAt` comes is deleted for every subscriber, as by a client's delete,
/// and its blob becomes unreferenced.
@Suite("Expiry delivery", .timeLimit(.minutes(30)))
struct ExpiryDeliveryTests {
    @Test("an expired object disappears from every subscriber; its blob is no longer readable")
    func expiredForEverySubscriber() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { server in
                let (alice, bob, _) = try await BlobTests.room(server, db)
                let room = partition("room=r1")
                let reference = try await server.http.uploadBlob(BlobTests.bytes(5_000), token: alice.accessToken)
                var clients: [TestSyncClient] = []
                for user in [alice, bob] {
                    let client = try await server.connect(token: user.accessToken)
                    _ = try await client.next()
                    _ = try await client.subscribe(room).get()
                    clients.append(client)
                }
                let expiresAt = Date(timeIntervalSinceNow: 1.5)
                let note = key("Note", "soon")
                #expect(try await clients[0].upload(
                    [.put(note, body: ["text": "gone soon", "photo": reference.json, ObjectExpiry.field: .string(ObjectExpiry.string(expiresAt))])],
                    to: room, requestId: "soon"
                ).isAck)
                #expect(try await server.http.getBlob(reference.digest, in: room, token: bob.accessToken).status == 200)
                for (index, client) in clients.enumerated() {
                    // The put, then (after about 1.5 s) the deletion.
                    _ = try await client.next(timeout: .seconds(10)) { message in
                        if case .changes(let batch) = message { return batch.objects.contains { $0.key == note && $0.body != nil } }
                        return false
                    }
                    _ = try await client.next(timeout: .seconds(15)) { message in
                        if case .changes(let batch) = message { return batch.objects.contains { $0.key == note && $0.body == nil } }
                        return false
                    }
                    print("expiry: client \(index) saw the deletion \(Date().timeIntervalSince(expiresAt)) s after the expiry time")
                }
                #expect(try await server.http.getBlob(reference.digest, in: room, token: bob.accessToken).status == 404)
            }
        }
    }

    @Test("an expiry time that passes while no server runs is carried out by the next server that starts")
    func acrossRestarts() async throws {
        try await TestDatabase.with { db in
            let note = key("Note", "later")
            let due = Date(timeIntervalSinceNow: 3)
            try await db.store().upload(Upload(
                partition: partition("room=r1"),
                operations: [.put(note, body: ["text": "x", ObjectExpiry.field: .string(ObjectExpiry.string(due))])], principal: "setup"))
            // A server runs and stops before the time comes; none runs when it passes.
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { _ in }
            #expect(try await db.body(of: note) != nil)
            while Date() < due { try await Task.sleep(for: .milliseconds(100)) }
            #expect(try await db.body(of: note) != nil)
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { _ async throws in
                #expect(try await TestTriggers.eventually {
                    try await db.scalar("SELECT count(*)::bigint FROM psync_objects WHERE id = 'later' AND body IS NULL") == 1
                })
            }
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_expiries") == 0)
        }
    }
}
