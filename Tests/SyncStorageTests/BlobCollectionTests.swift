import Crypto
import Foundation
import NIOCore
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// The blob collector against writes that reference blobs: a blob nothing references goes,
/// one referenced never does, also when both happen at once.
@Suite("Blob collection", .timeLimit(.minutes(30)))
struct BlobCollectionTests {
    static func blobs(_ db: TestDatabase, chunkSize: Int = 1_000) -> BlobStore {
        BlobStore(client: db.client, content: PostgresBlobContent(client: db.client, chunkSize: chunkSize, logger: db.logger), logger: db.logger)
    }

    /// Stores `bytes` as a blob, as the PUT endpoint does, and returns its reference; its
    /// uploader holds it, and so may cite it (the `apply` helper writes as "tester").
    static func store(_ bytes: [UInt8], in blobs: BlobStore, by principal: String = "tester") async throws -> BlobReference {
        let digest = BlobDigest(sha256: SHA256.hash(data: bytes))
        let upload = try await blobs.content.beginUpload(by: principal)
        try await upload.append(ByteBuffer(bytes: bytes))
        try await upload.finish()
        if try await blobs.publish(
            digest, location: upload.location, length: Int64(bytes.count), contentType: "application/octet-stream",
            uploader: principal, quota: .max)
        {
            try await upload.published()
        }
        return BlobReference(digest: digest, length: Int64(bytes.count), contentType: "application/octet-stream")
    }

    static func read(_ reference: BlobReference, from blobs: BlobStore) async throws -> [UInt8]? {
        guard let blob = try await blobs.blob(reference.digest) else { return nil }
        var bytes: [UInt8] = []
        for try await piece in blobs.content.read(blob.location, range: 0..<blob.length) { bytes += Array(buffer: piece) }
        return bytes
    }

    @Test("unreferenced and abandoned bytes are collected; referenced blobs are not; released ones after the horizon")
    func collection() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let blobs = Self.blobs(db)
            let kept = try await Self.store(Array(repeating: 1, count: 2_500), in: blobs)
            let orphan = try await Self.store(Array(repeating: 2, count: 2_500), in: blobs)
            let abandoned = try await blobs.content.beginUpload(by: "someone")
            try await abandoned.append(ByteBuffer(bytes: Array(repeating: 3, count: 1_500)))
            try await store.apply([.put(key("Message", "m1"), body: ["photo": ["nested": [kept.json]]])], in: partition("room=r1"))

            // Within the grace period nothing goes.
            #expect(try await blobs.collect(unreferencedFor: .seconds(3600), releasedFor: .zero) == 0)
            #expect(try await blobs.collect(unreferencedFor: .zero, releasedFor: .zero) == 1)
            #expect(try await blobs.blob(orphan.digest) == nil)
            #expect(try await Self.read(kept, from: blobs) == Array(repeating: 1, count: 2_500))
            // Only the kept blob's three chunks are left: the orphan's and the abandoned upload's went.
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_chunks") == 3)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_trash") == 0)

            // Deleted, the object releases the blob; it stays while tombstones are kept.
            try await store.apply([.delete(key("Message", "m1"))], in: partition("room=r1"))
            #expect(try await blobs.blob(kept.digest, referencedIn: partition("room=r1")) == nil)
            #expect(try await blobs.collect(unreferencedFor: .zero, releasedFor: .seconds(3600)) == 0)
            #expect(try await blobs.collect(unreferencedFor: .zero, releasedFor: .zero) == 1)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_chunks") == 0)
            #expect(try await db.scalar("SELECT count(*)::bigint FROM psync_blob_refs") == 0)
        }
    }

    @Test("a reference moved to another blob releases the first; a trigger-style multi-partition write keeps its references")
    func referencesFollowBodies() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let blobs = Self.blobs(db)
            let first = try await Self.store([1, 2, 3], in: blobs)
            let second = try await Self.store([4, 5, 6], in: blobs)
            try await store.apply([.put(key("Message", "m1"), body: ["photo": first.json, "again": [first.json]])], in: partition("room=r1"))
            try await store.apply([.set(key("Message", "m1"), path: path("photo"), value: second.json)], in: partition("room=r1"))
            #expect(try await blobs.blob(first.digest, referencedIn: partition("room=r1")) != nil)
            try await store.apply([.unset(key("Message", "m1"), path: path("again"))], in: partition("room=r1"))
            #expect(try await blobs.blob(first.digest, referencedIn: partition("room=r1")) == nil)
            #expect(try await blobs.blob(second.digest, referencedIn: partition("room=r1")) != nil)
            #expect(try await blobs.collect(unreferencedFor: .zero, releasedFor: .zero) == 1)
            #expect(try await blobs.blob(second.digest) != nil)

            let missing = BlobReference(digest: BlobDigest(sha256: SHA256.hash(data: [9])), length: 1, contentType: "x")
            let refused = await errorCode {
                try await store.withWriteTransaction(author: "trigger:test") { transaction in
                    try await transaction.apply([
                        partition("room=r2"): [.put(key("Message", "m2"), body: ["photo": second.json])],
                        partition("room=r3"): [.put(key("Message", "m3"), body: ["photo": missing.json])],
                    ])
                }
            }
            #expect(refused == .blobMissing)
        }
    }

    @Test("writes referencing a blob race the collector: an acknowledged reference always has its bytes")
    func raceWithCollector() async throws {
        let seed = ProcessInfo.processInfo.environment["PSYNC_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 1...1_000_000)
        let rounds = 40
        print("blob collection race: seed \(seed), \(rounds) rounds")
        try await TestDatabase.with { db in
            let store = db.store()
            let blobs = Self.blobs(db, chunkSize: 512)
            var random = SeededGenerator(seed: seed)
            var (acked, refused) = (0, 0)
            for round in 0..<rounds {
                let bytes = (0..<2_000).map { _ in UInt8.random(in: 0...255, using: &random) }
                let reference = try await Self.store(bytes, in: blobs)
                let writerDelay = Int.random(in: 0...3_000, using: &random)
                let collectorDelay = Int.random(in: 0...3_000, using: &random)
                let results = try await withThrowingTaskGroup(of: Bool?.self) { tasks in
                    for writer in 0..<3 {
                        tasks.addTask {
                            try await Task.sleep(for: .microseconds(writerDelay + writer * 500))
                            do {
                                try await store.apply(
                                    [.put(key("Message", "r\(round)-w\(writer)"), body: ["photo": reference.json])],
                                    in: partition("room=r\(writer)"))
                                return true
                            } catch let error as SyncError where error.code == .blobMissing {
                                return false
                            }
                        }
                    }
                    tasks.addTask {
                        try await Task.sleep(for: .microseconds(collectorDelay))
                        _ = try await blobs.collect(unreferencedFor: .zero, releasedFor: .zero)
                        return nil
                    }
                    var results: [Bool] = []
                    for try await result in tasks { if let result { results.append(result) } }
                    return results
                }
                acked += results.filter { $0 }.count
                refused += results.filter { !$0 }.count
                // Every object that was written has its blob, whole.
                let written = try await db.scalar(
                    "SELECT count(*)::bigint FROM psync_objects WHERE id LIKE 'r\(round)-%' AND body IS NOT NULL")
                if written > 0 {
                    #expect(try await Self.read(reference, from: blobs) == bytes, "round \(round), seed \(seed)")
                }
            }
            _ = try await blobs.collect(unreferencedFor: .zero, releasedFor: .zero)
            let dangling = try await db.scalar(
                """
                SELECT count(*)::bigint FROM psync_blob_refs r
                WHERE r.released_at IS NULL AND NOT EXISTS (SELECT 1 FROM psync_blobs b WHERE b.digest = r.digest)
                """)
            #expect(dangling == 0, "seed \(seed)")
            print("blob collection race: \(acked) writes acked, \(refused) refused blob_missing")
            #expect(acked + refused == rounds * 3)
        }
    }
}
