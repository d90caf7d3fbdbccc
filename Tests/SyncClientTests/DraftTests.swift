import Foundation
import PartitionSync
import SyncClient
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Drafts: writes kept on the device until published or discarded.
@Suite("Client drafts", .timeLimit(.minutes(30)))
struct DraftTests {
    @Test("a draft shows in its app, survives a restart and is never uploaded; published it reaches another user, discarded it is gone")
    func draftsStayLocal() async throws {
        let harness = ClientHarness()
        defer { harness.cleanUp() }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, permissions: SharedRules.permissions) { server in
                let room = partition("shared=wiki")
                let (home, scratch, after) = (key("Page", "home"), key("Page", "scratch"), key("Page", "after"))
                let bob = try harness.client(server.baseURL, store: "bob")
                _ = try await bob.register(email: "bob@example.com", password: "correct horse")
                let ann = try harness.client(server.baseURL, store: "ann")
                _ = try await ann.register(email: "ann@example.com", password: "correct horse")
                try await ClientHarness.running(bob) {
                    let bobs = try await bob.open(room)
                    try await ClientHarness.running(ann) {
                        let anns = try await ann.open(room)
                        #expect(await ann.waitUntilUpToDate(room, timeout: .seconds(10)))
                        try await ann.saveDraft([.put(home, body: ["markdown": "first"])], in: room, id: "home")
                        // Saved again under its id: replaced, not added.
                        try await ann.saveDraft([.put(home, body: ["markdown": "second"])], in: room, id: "home")
                        try await ann.saveDraft([.put(scratch, body: [:])], in: room)
                        #expect(try await ann.objects(in: room).first { $0.key == home }?.body?["markdown"] == "second")
                        #expect(try await ann.drafts(in: room).map(\.id).first == "home")
                        #expect(try await ann.drafts(in: room).count == 2)
                        #expect(try await ann.unacknowledgedWrites() == 0)
                        // An ordinary write after the drafts is uploaded; the drafts are not.
                        try await anns.write([.put(after, body: [:])])
                        #expect(await ann.waitUntilUploaded(timeout: .seconds(10)))
                        for await snapshot in await bobs.updates() where snapshot.objects.contains(where: { $0.key == after }) { break }
                        #expect(try await bob.objects(in: room).map(\.key) == [after])
                        #expect(try await db.store().body(of: home) == nil)
                        #expect(try await db.store().body(of: scratch) == nil)
                    }
                    // Ann's app starts again on its store: the drafts are there, still local.
                    let again = try harness.client(server.baseURL, store: "ann")
                    #expect(Set(try await again.drafts().map(\.id)).contains("home"))
                    try await ClientHarness.running(again) {
                        _ = try await again.open(room)
                        #expect(await again.waitUntilUpToDate(room, timeout: .seconds(10)))
                        #expect(try await again.objects(in: room).first { $0.key == home }?.body?["markdown"] == "second")
                        try await again.publishDraft("home")
                        let other = try #require(try await again.drafts(in: room).first)
                        try await again.discardDraft(other.id)
                        #expect(try await again.drafts().isEmpty)
                        #expect(try await again.objects(in: room).contains { $0.key == scratch } == false)
                        #expect(await again.waitUntilUploaded(timeout: .seconds(10)))
                        #expect(try await db.store().body(of: home)?["markdown"] == "second")
                        // Publishing a draft that is gone is refused.
                        await #expect(throws: SyncError.self) { try await again.publishDraft("home") }
                    }
                    for await snapshot in await bobs.updates() where snapshot.objects.contains(where: { $0.key == home }) { break }
                    #expect(try await bob.objects(in: room).map(\.key).contains(scratch) == false)
                }
            }
        }
    }
}
