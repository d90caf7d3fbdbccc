import Foundation
import PartitionSync
import SyncClient
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Blobs in the SDK: attached offline, uploaded before the writes that reference them (also
/// after the app restarts), fetched lazily into a bounded cache; and local expiry.
@Suite("Client blobs and local expiry", .timeLimit(.minutes(30)))
struct BlobClientTests {
    static func bytes(_ count: Int, seed: Int) -> Data {
        Data((0..<count).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ seed &+ $0 >> 9) })
    }

    @Test("a blob attached offline goes before its write, after a restart too; another user fetches it; the cache stays bounded")
    func attachOfflineAndFetch() async throws {
        let harness = ClientHarness()
        defer { harness.cleanUp() }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: SharedRules.permissions) { server in
                let shared = partition("shared=photos")
                // Ann's app attaches a photo and writes the message without ever connecting, then stops.
                let ann = try harness.client(server.baseURL, store: "ann")
                try await ann.register(email: "ann@example.com", password: "correct horse")
                let photo = Self.bytes(3 << 20, seed: 1)
                let reference = try await ann.attach(photo, contentType: "image/jpeg")
                try await ann.write([.put(key("Message", "m1"), body: ["photo": reference.json])], in: shared)
                #expect(try await ann.pendingBlobUploads() == 1)
                // Restarted from its store, the app uploads the blob and then the write.
                let restarted = try harness.client(server.baseURL, store: "ann")
                let events = await restarted.events()
                try await ClientHarness.running(restarted) {
                    #expect(await restarted.waitUntilUploaded(timeout: .seconds(60)))
                }
                #expect(try await restarted.pendingBlobUploads() == 0)
                #expect(try await db.body(of: key("Message", "m1"))?["photo"] == reference.json)
                var rejected = false
                for await event in events {
                    if case .rejected = event { rejected = true }
                    if case .status(.offline) = event { break }
                }
                #expect(!rejected)

                // Bob fetches it lazily; his cache keeps at most 4 MiB of fetched blobs.
                var configuration = SyncClientConfiguration(
                    serverURL: URL(string: server.baseURL)!, storePath: harness.directory + "/bob.sqlite")
                configuration.blobCacheBytes = 4 << 20
                let bob = try SyncClient(configuration: configuration)
                try await bob.register(email: "bob@example.com", password: "correct horse")
                #expect(try await bob.blob(reference, in: shared) == photo)
                // A second blob, his own, pushes the first out of his cache once uploaded.
                let second = Self.bytes(2 << 20, seed: 2)
                let secondReference = try await bob.attach(second, contentType: "image/png")
                try await bob.write([.put(key("Message", "m2"), body: ["photo": secondReference.json])], in: shared)
                try await ClientHarness.running(bob) { #expect(await bob.waitUntilUploaded(timeout: .seconds(30))) }
                #expect(try await bob.blob(secondReference, in: shared) == second)
                let cached = try FileManager.default.contentsOfDirectory(atPath: harness.directory + "/bob.sqlite.blobs")
                #expect(cached == [String(secondReference.digest.rawValue.dropFirst(7))])
                // Fetched again from the server when needed.
                #expect(try await bob.blob(reference, in: shared) == photo)

                // A blob nobody references is not found.
                let stray = BlobReference(digest: TestHTTPClient.digest(of: Self.bytes(10, seed: 3)), length: 10, contentType: "x")
                await #expect(throws: SyncError(.notFound, "no blob \(stray.digest) in \(shared) that you may read")) { try await bob.blob(stray, in: shared) }
            }
        }
    }

    @Test("an object or a partition expired locally leaves this client, not the server")
    func localExpiry() async throws {
        try await ClientHarness.withAnn { db, client, userID in
            let mine = try await client.open(partition("user=\(userID)"))
            try await mine.write([.put(key("Note", "a"), body: ["text": "a"]), .put(key("Note", "b"), body: ["text": "b"])])
            #expect(await client.waitUntilUploaded(timeout: .seconds(10)))
            var updates = await mine.updates().makeAsyncIterator()
            try await client.expireLocally(key("Note", "a"), in: mine.partition, at: Date(timeIntervalSinceNow: 0.3))
            // The observer hears of it without anything else happening.
            while let snapshot = await updates.next() {
                if snapshot.objects.map(\.key) == [key("Note", "b")] { break }
            }
            #expect(try await db.body(of: key("Note", "a"))?["text"] == "a")
            try await client.expireLocally(mine.partition, at: Date())
            #expect(try await client.objects(in: mine.partition).isEmpty)
            // Opened again, the partition is downloaded anew, with the server's objects.
            _ = try await client.open(mine.partition)
            #expect(await client.waitUntilUpToDate(mine.partition, timeout: .seconds(10)))
            let keys = try await client.objects(in: mine.partition).map(\.key)
            #expect(keys.contains(key("Note", "a")) && keys.contains(key("Note", "b")))
        }
    }
}
