import Foundation
import PostgresNIO
import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// A digest is a name, not a key (docs/PROTOCOL.md, "Blobs"; issue 29, findings 1 and 2): a
/// blob is cited only by who holds its bytes or where it is cited already, and read through a
/// partition that references it.
@Suite("Blob capabilities", .timeLimit(.minutes(30)))
struct BlobCapabilityTests {
    @Test("an outsider who learns a digest cannot cite it in a partition of their own, and is answered as for no blob at all")
    func outsiderCannotCite() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { server in
                let (alice, _, mallory) = try await BlobTests.room(server, db)
                let http = server.http
                let photo = BlobTests.bytes(50_000)
                let reference = try await http.uploadBlob(photo, contentType: "image/jpeg", token: alice.accessToken)
                let members = try await server.connect(token: alice.accessToken)
                _ = try await members.next()
                #expect(try await members.upload(
                    [.put(key("Message", "m1"), body: ["photo": reference.json])], to: partition("room=r1"), requestId: "m1").isAck)

                // Mallory read the digest somewhere and cites it in her own partition.
                let own = partition("user=\(mallory.userID)")
                let client = try await server.connect(token: mallory.accessToken)
                _ = try await client.next()
                let stolen = try await client.upload(
                    [.put(key("Note", "n1"), body: ["photo": reference.json])], to: own, requestId: "n1")
                let never = BlobReference(digest: TestHTTPClient.digest(of: BlobTests.bytes(50_000, seed: 3)), length: 50_000, contentType: "image/jpeg")
                let invented = try await client.upload(
                    [.put(key("Note", "n2"), body: ["photo": never.json])], to: own, requestId: "n2")
                guard case .rejected(_, _, let stolenError, _) = stolen, case .rejected(_, _, let inventedError, _) = invented else {
                    Issue.record("expected two rejections, got \(stolen) and \(invented)")
                    return
                }
                // The same answer whether the blob exists or not.
                #expect(stolenError.code == .blobMissing && inventedError.code == .blobMissing)
                #expect(stolenError.message.replacingOccurrences(of: reference.digest.rawValue, with: "D")
                    == inventedError.message.replacingOccurrences(of: never.digest.rawValue, with: "D"))
                #expect(stolenError.details?["digests"] == [.string(reference.digest.rawValue)])
                // Nor does she read it, through her partition or the room.
                #expect(try await http.getBlob(reference.digest, in: own, token: mallory.accessToken).status == 404)
                #expect(try await http.getBlob(reference.digest, in: partition("room=r1"), token: mallory.accessToken).status == 404)
                #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_refs WHERE partition = 'user=\(mallory.userID)'") == 0)

                // Once she shows she has the bytes (uploads them), she may cite them.
                #expect(try await http.putBlob(photo, contentType: "image/jpeg", token: mallory.accessToken).status == 200)
                #expect(try await client.upload(
                    [.put(key("Note", "n1"), body: ["photo": reference.json])], to: own, requestId: "n1b").isAck)
                #expect(try await http.getBlob(reference.digest, in: own, token: mallory.accessToken).status == 200)
            }
        }
    }

    @Test("a member who downloaded a photo may cite it elsewhere; a removed member who never did may not, nor read it any more")
    func membersAndFormerMembers() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { server in
                let (alice, bob, _) = try await BlobTests.room(server, db)
                let carol = try await server.register("carol@example.com")
                let store = db.store()
                try await store.upload(Upload(
                    partition: partition("user=\(carol.userID)"),
                    operations: [.put(key("Profile", carol.userID), body: ["rooms": ["r1"]])], principal: "setup"))
                let http = server.http
                let photo = BlobTests.bytes(30_000, seed: 5)
                let reference = try await http.uploadBlob(photo, contentType: "image/png", token: alice.accessToken)
                let room = partition("room=r1")
                let aliceClient = try await server.connect(token: alice.accessToken)
                _ = try await aliceClient.next()
                #expect(try await aliceClient.upload([.put(key("Message", "m1"), body: ["photo": reference.json])], to: room, requestId: "m1").isAck)

                // Bob downloads it whole: he holds it, and forwards it to his own partition.
                #expect(try await http.getBlob(reference.digest, in: room, token: bob.accessToken).data == photo)
                let bobClient = try await server.connect(token: bob.accessToken)
                _ = try await bobClient.next()
                #expect(try await bobClient.upload(
                    [.put(key("Note", "fwd"), body: ["photo": reference.json])], to: partition("user=\(bob.userID)"), requestId: "f1").isAck)
                // Within the room, citing what the room already cites needs nothing more.
                let carolClient = try await server.connect(token: carol.accessToken)
                _ = try await carolClient.next()
                #expect(try await carolClient.upload([.put(key("Message", "m2"), body: ["again": reference.json])], to: room, requestId: "m2").isAck)
                // A range is not the whole blob: it does not make its reader a holder.
                #expect(try await http.getBlob(reference.digest, in: room, token: carol.accessToken, headers: ["Range": "bytes=0-9"]).status == 206)

                // Carol leaves the room without ever downloading the photo.
                try await store.upload(Upload(
                    partition: partition("user=\(carol.userID)"),
                    operations: [.put(key("Profile", carol.userID), body: ["rooms": []])], principal: "setup"))
                #expect(try await http.getBlob(reference.digest, in: room, token: carol.accessToken).status == 404)
                let cited = try await carolClient.upload(
                    [.put(key("Note", "keep"), body: ["photo": reference.json])], to: partition("user=\(carol.userID)"), requestId: "k1")
                #expect(cited.rejectionCode == .blobMissing)
            }
        }
    }

    @Test("a blob cited in 10,000 other partitions is read through the one the reader may read; a read names its partition")
    func popularBlob() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { server in
                let (alice, bob, mallory) = try await BlobTests.room(server, db)
                let http = server.http
                let sticker = BlobTests.bytes(2_000, seed: 11)
                let reference = try await http.uploadBlob(sticker, contentType: "image/png", token: alice.accessToken)
                // 10,000 other conversations cite it (as the collector and the reads see them).
                try await db.client.query(
                    """
                    INSERT INTO psync_blob_refs (digest, collection, id, partition)
                    SELECT \(reference.digest.rawValue), 'Message', 'other' || n, 'room=other' || n FROM generate_series(1, 10000) AS n
                    """, logger: db.logger)
                let room = partition("room=r1")
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                #expect(try await client.upload([.put(key("Message", "m1"), body: ["sticker": reference.json])], to: room, requestId: "m1").isAck)
                for _ in 0..<3 {
                    #expect(try await http.getBlob(reference.digest, in: room, token: bob.accessToken).data == sticker)
                }
                // Through a partition that cites it but that Mallory may not read: not found.
                #expect(try await http.getBlob(reference.digest, in: partition("room=other1"), token: mallory.accessToken).status == 404)
                // No partition named: a clear refusal.
                let unnamed = try await http.getBlob(reference.digest, in: nil, token: bob.accessToken)
                #expect(unnamed.status == 400)
                #expect(unnamed.json?["error"]?["code"] == "bad_request")
            }
        }
    }
}
