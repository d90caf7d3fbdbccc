import Foundation
import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Blobs over real HTTP: content addressing, references checked at upload, who may read,
/// ranges, limits (docs/PROTOCOL.md, "Blobs").
@Suite("Blobs", .timeLimit(.minutes(30)))
struct BlobTests {
    /// Bytes that are not all alike, so a wrong offset shows.
    static func bytes(_ count: Int, seed: UInt8 = 7) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &+ $0 >> 8) })
    }

    /// Alice and Bob in room r1, Mallory in none.
    static func room(_ server: TestServer, _ db: TestDatabase) async throws -> (TestHTTPClient.Tokens, TestHTTPClient.Tokens, TestHTTPClient.Tokens) {
        let alice = try await server.register("alice@example.com")
        let bob = try await server.register("bob@example.com")
        let mallory = try await server.register("mallory@example.com")
        let store = db.store()
        for user in [alice, bob] {
            try await store.upload(Upload(
                partition: partition("user=\(user.userID)"), operations: [.put(key("Profile", user.userID), body: ["rooms": ["r1"]])],
                principal: "setup"))
        }
        return (alice, bob, mallory)
    }

    @Test("a blob is stored once under its digest; wrong bytes, no credential and a bad digest are refused")
    func contentAddressed() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { server in
                let alice = try await server.register("alice@example.com")
                let bob = try await server.register("bob@example.com")
                let http = server.http
                let photo = Self.bytes(600_000)
                let first = try await http.putBlob(photo, contentType: "image/jpeg", token: alice.accessToken)
                #expect(first.status == 201)
                let reference = try BlobReference(fields: try #require(first.json?.objectValue))
                #expect(reference.digest == TestHTTPClient.digest(of: photo))
                #expect(reference.length == 600_000 && reference.contentType == "image/jpeg")
                // Again, by someone else: 200, and nothing stored twice.
                let again = try await http.putBlob(photo, contentType: "image/jpeg", token: bob.accessToken)
                #expect(again.status == 200)
                #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blobs") == 1)
                #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_chunks") == 3)
                #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_uploads WHERE id::text NOT IN (SELECT location FROM psync_blobs)") == 0)

                // The bytes must have the digest they are sent to.
                let other = Self.bytes(1_000, seed: 9)
                let mismatch = try await http.putBlob(other, as: reference.digest, token: alice.accessToken)
                #expect(mismatch.status == 400)
                #expect(mismatch.json?["error"]?["code"] == "digest_mismatch")
                let wrongNew = try await http.putBlob(other, as: TestHTTPClient.digest(of: Self.bytes(5)), token: alice.accessToken)
                #expect(wrongNew.json?["error"]?["code"] == "digest_mismatch")
                #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_chunks") == 3)

                #expect(try await http.putBlob(other, token: nil).status == 401)
                let malformed = try await http.request("PUT", "/v1/blobs/sha256:ABC", body: other, token: alice.accessToken)
                #expect(malformed.status == 400)
                #expect(malformed.json?["error"]?["code"] == "invalid_blob_reference")
                let methods = try await http.request("POST", "/v1/blobs/\(reference.digest)", body: other, token: alice.accessToken)
                #expect(methods.status == 405)
            }
        }
    }

    @Test("an upload referencing a blob not stored is rejected with its digests; after the blob, it is acked")
    func referencesChecked() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { server in
                let (alice, _, _) = try await Self.room(server, db)
                let photo = Self.bytes(10_000)
                let digest = TestHTTPClient.digest(of: photo)
                let reference = BlobReference(digest: digest, length: 10_000, contentType: "image/png")
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                let message: [String: JSONValue] = ["text": "look", "photo": reference.json]
                let early = try await client.upload([.put(key("Message", "m1"), body: message)], to: partition("room=r1"), requestId: "m1")
                guard case .rejected(let requestId, _, let error, _) = early else {
                    Issue.record("expected a rejection, got \(early)")
                    return
                }
                #expect(requestId == "m1")
                #expect(error.code == .blobMissing)
                #expect(error.details?["digests"] == [.string(digest.rawValue)])

                // Malformed references are refused whatever is stored.
                let malformed = try await client.upload(
                    [.put(key("Message", "m2"), body: ["photo": ["@blob": "sha256:nothex", "length": 1, "contentType": "x"]])],
                    to: partition("room=r1"), requestId: "m2")
                #expect(malformed.rejectionCode == .invalidBlobReference)

                _ = try await server.http.uploadBlob(photo, contentType: "image/png", token: alice.accessToken)
                // The same request id has its outcome: a new id applies it.
                #expect(try await client.upload([.put(key("Message", "m1"), body: message)], to: partition("room=r1"), requestId: "m1").rejectionCode == .blobMissing)
                #expect(try await client.upload([.put(key("Message", "m1"), body: message)], to: partition("room=r1"), requestId: "m1b").isAck)
                // A length that is not the stored one is no reference to it.
                var wrong = reference
                wrong.length = 9_999
                let lying = try await client.upload(
                    [.put(key("Message", "m3"), body: ["photo": wrong.json])], to: partition("room=r1"), requestId: "m3")
                #expect(lying.rejectionCode == .blobMissing)
                // A set that writes the reference into an existing object is checked too.
                let missing = BlobReference(digest: TestHTTPClient.digest(of: Self.bytes(3)), length: 3, contentType: "x")
                let set = try await client.upload(
                    [.set(key("Message", "m1"), path: try Path(parsing: "photo"), value: missing.json)], to: partition("room=r1"),
                    requestId: "m4")
                #expect(set.rejectionCode == .blobMissing)
                let setDigest = try await client.upload(
                    [.set(key("Message", "m1"), path: Path.field("photo").field("@blob"), value: .string(missing.digest.rawValue))],
                    to: partition("room=r1"), requestId: "m5")
                #expect(setDigest.rejectionCode == .blobMissing)
            }
        }
    }

    @Test("members read a blob; an outsider, or anyone for a blob nothing references, gets 404 like for no blob at all")
    func readPermission() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { server in
                let (alice, bob, mallory) = try await Self.room(server, db)
                let http = server.http
                let photo = Self.bytes(700_000)
                let reference = try await http.uploadBlob(photo, contentType: "image/jpeg", token: alice.accessToken)
                // Stored but referenced by nothing: not even its uploader reads it.
                #expect(try await http.getBlob(reference.digest, in: partition("room=r1"), token: alice.accessToken).status == 404)
                let client = try await server.connect(token: alice.accessToken)
                _ = try await client.next()
                #expect(try await client.upload(
                    [.put(key("Message", "m1"), body: ["photo": reference.json])], to: partition("room=r1"), requestId: "m1").isAck)

                let fetched = try await http.getBlob(reference.digest, in: partition("room=r1"), token: bob.accessToken)
                #expect(fetched.status == 200)
                #expect(fetched.data == photo)
                #expect(fetched.headers["content-type"] == "image/jpeg")
                #expect(fetched.headers["content-length"] == "700000")
                #expect(fetched.headers["etag"] == "\"\(reference.digest)\"")
                #expect(fetched.headers["accept-ranges"] == "bytes")
                let cached = try await http.getBlob(reference.digest, in: partition("room=r1"), token: bob.accessToken, headers: ["If-None-Match": "\"\(reference.digest)\""])
                #expect(cached.status == 304)

                let outsider = try await http.getBlob(reference.digest, in: partition("room=r1"), token: mallory.accessToken)
                let nothing = try await http.getBlob(TestHTTPClient.digest(of: Self.bytes(12)), in: partition("room=r1"), token: mallory.accessToken)
                #expect(outsider.status == 404 && nothing.status == 404)
                #expect(outsider.json?["error"]?["code"] == "not_found")
                #expect(outsider.text.replacingOccurrences(of: reference.digest.rawValue, with: "D")
                    == nothing.text.replacingOccurrences(of: TestHTTPClient.digest(of: Self.bytes(12)).rawValue, with: "D"))
                #expect(try await http.getBlob(reference.digest, in: partition("room=r1"), token: nil).status == 401)

                // Once the message is deleted, members lose it too.
                #expect(try await client.upload([.delete(key("Message", "m1"))], to: partition("room=r1"), requestId: "d1").isAck)
                #expect(try await http.getBlob(reference.digest, in: partition("room=r1"), token: bob.accessToken).status == 404)
            }
        }
    }

    @Test("a Range request returns exactly the range; an unsatisfiable one is 416")
    func ranges() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: TestRules.permissions) { server in
                let (alice, bob, _) = try await Self.room(server, db)
                let http = server.http
                // Over several chunks (256 KiB each), ending inside one.
                let photo = Self.bytes(1_000_003)
                let reference = try await http.uploadBlob(photo, token: alice.accessToken)
                _ = try await db.store().upload(Upload(
                    partition: partition("room=r1"), operations: [.put(key("Message", "m1"), body: ["photo": reference.json])],
                    principal: alice.userID))
                let cases: [(String, Range<Int>)] = [
                    ("bytes=0-0", 0..<1), ("bytes=10-19", 10..<20), ("bytes=262140-262150", 262_140..<262_151),
                    ("bytes=300000-900000", 300_000..<900_001), ("bytes=999990-", 999_990..<1_000_003),
                    ("bytes=-7", 999_996..<1_000_003), ("bytes=1000000-2000000", 1_000_000..<1_000_003),
                    ("bytes=-5000000", 0..<1_000_003),
                ]
                for (header, expected) in cases {
                    let part = try await http.getBlob(reference.digest, in: partition("room=r1"), token: bob.accessToken, headers: ["Range": header])
                    #expect(part.status == 206, "\(header)")
                    #expect(part.data == photo.subdata(in: expected), "\(header)")
                    #expect(part.headers["content-range"] == "bytes \(expected.lowerBound)-\(expected.upperBound - 1)/1000003", "\(header)")
                    #expect(part.headers["content-length"] == "\(expected.count)", "\(header)")
                }
                for header in ["bytes=1000003-", "bytes=2000000-3000000", "bytes=-0"] {
                    let refused = try await http.getBlob(reference.digest, in: partition("room=r1"), token: bob.accessToken, headers: ["Range": header])
                    #expect(refused.status == 416, "\(header)")
                    #expect(refused.headers["content-range"] == "bytes */1000003", "\(header)")
                }
                // Not a range this server serves as such: the whole blob.
                for header in ["bytes=0-1,5-6", "items=0-5", "bytes=9-3", "bytes=x-"] {
                    let whole = try await http.getBlob(reference.digest, in: partition("room=r1"), token: bob.accessToken, headers: ["Range": header])
                    #expect(whole.status == 200, "\(header)")
                    #expect(whole.data == photo, "\(header)")
                }
                let stale = try await http.getBlob(reference.digest, in: partition("room=r1"), token: bob.accessToken, headers: ["Range": "bytes=0-9", "If-Range": "\"other\""])
                #expect(stale.status == 200 && stale.data == photo)
            }
        }
    }

    @Test("the size limit and the quota are exact at their edges")
    func limits() async throws {
        try await TestDatabase.with { db in
            try await TestServer.with(
                database: db.url, permissions: TestRules.permissions,
                configure: { configuration in
                    configuration.blobs.maximumBytes = 100_000
                    configuration.blobs.quotaBytes = 250_000
                    configuration.blobs.chunkBytes = 30_000
                }
            ) { server in
                let alice = try await server.register("alice@example.com")
                let bob = try await server.register("bob@example.com")
                let http = server.http
                #expect(try await http.putBlob(Self.bytes(100_000), token: alice.accessToken).status == 201)
                let over = try await http.putBlob(Self.bytes(100_001), token: alice.accessToken)
                #expect(over.status == 413)
                #expect(over.json?["error"]?["code"] == "payload_too_large")
                #expect(try await http.putBlob(Self.bytes(100_000, seed: 1), token: alice.accessToken).status == 201)
                #expect(try await http.putBlob(Self.bytes(50_000, seed: 2), token: alice.accessToken).status == 201)
                // 250,000 used of 250,000: one byte more is over the quota; someone else's is not.
                let quota = try await http.putBlob(Self.bytes(1, seed: 3), token: alice.accessToken)
                #expect(quota.status == 413)
                #expect(quota.json?["error"]?["code"] == "quota_exceeded")
                #expect(try await http.putBlob(Self.bytes(1, seed: 3), token: bob.accessToken).status == 201)
                // A blob stored already costs nothing more.
                #expect(try await http.putBlob(Self.bytes(100_000), token: alice.accessToken).status == 200)
                #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_uploads") == 0)
                #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_chunks") == 4 + 4 + 2 + 1)
            }
        }
    }
}
