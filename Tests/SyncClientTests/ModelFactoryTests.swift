import Foundation
import PartitionSync
import SyncClient
import SyncProtocol
import SyncTesting
import Testing

/// CouchModel's relationships and model factory on the SDK, against a real server: documents
/// of several kinds in one collection, each read as its own model by its `type`, and typed
/// references resolved through the open partitions.
@Suite("References and typed factories", .timeLimit(.minutes(30)))
struct ModelFactoryTests {
    struct Folder: SyncModel, Equatable {
        static let collection = "item"
        static let documentType = "folder"
        var _id: String
        var type = "folder"
        var name: String
    }

    struct Note: SyncModel, Equatable {
        static let collection = "item"
        static let documentType = "note"
        var _id: String
        var type = "note"
        var text: String
        var folder: Reference<Folder>
        var tag: Reference<Tag>?
    }

    struct Tag: SyncModel, Equatable {
        static let collection = "tag"
        var _id: String
        var type = "tag"
        var label: String
    }

    static let items = ModelFactory(Folder.self, Note.self)

    /// `user=<id>` is its user's; `shelf=<any>` every user's.
    static var application: SyncApplication {
        var permissions = TestServer.defaultPermissions
        permissions.register(ClosureRule(read: { user, _, _ in user.userID != nil }, write: { user, _, _ in user.userID != nil }), for: PartitionKind("shelf"))
        return SyncApplication(permissions: permissions)
    }

    @Test("a partition's documents decoded by their type; references resolved in a partition, across the open ones, and before the server has them")
    func referencesAndFactory() async throws {
        let harness = ClientHarness()
        defer { harness.cleanUp() }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, application: Self.application) { server in
                let writer = try harness.client(server.baseURL, store: "writer")
                let userID = try await writer.register(email: "ann@example.com", password: "correct horse battery")
                let mine = try Partition(key: "user", value: userID)
                let shelf = try Partition("shelf=s1")
                let folder = Folder(_id: "f1", name: "Recipes")
                let tag = Tag(_id: "t1", label: "sweet")
                try await ClientHarness.running(writer) {
                    let handle = try await writer.open(mine)
                    try await handle.put(folder)
                    try await handle.put(Note(_id: "n1", text: "Pancakes", folder: Reference(to: folder), tag: Reference(to: tag)))
                    try await handle.put(Note(_id: "n2", text: "Crêpes", folder: Reference("f1")))
                    // A kind this app's factory does not know.
                    try await handle.write([.put(try ObjectKey(collection: "item", id: "s1"), body: ["type": "sticker", "shape": "star"])])
                    try await writer.open(shelf).put(tag)
                    #expect(await writer.waitUntilUploaded(timeout: .seconds(20)))
                }
                // In JSON a reference is the id, as the seeds store them.
                #expect(try await db.body(of: try ObjectKey(collection: "item", id: "n1"))?["folder"] == "f1")

                // Another device of Ann's reads them.
                let reader = try harness.client(server.baseURL, store: "reader")
                try await reader.login(email: "ann@example.com", password: "correct horse battery")
                try await ClientHarness.running(reader) {
                    let handle = try await reader.open(mine)
                    _ = try await reader.open(shelf)
                    #expect(await reader.waitUntilUpToDate(mine, timeout: .seconds(20)))
                    #expect(await reader.waitUntilUpToDate(shelf, timeout: .seconds(20)))

                    let models = try await handle.models(Self.items)
                    #expect(models.compactMap { $0 as? Folder } == [folder])
                    let notes = models.compactMap { $0 as? Note }.sorted { $0._id < $1._id }
                    #expect(notes.map(\.text) == ["Pancakes", "Crêpes"])
                    #expect(models.count == 3)   // the sticker is nobody's model here

                    let pancakes = try #require(notes.first)
                    #expect(try await handle.resolve(pancakes.folder) == folder)
                    // The tag lives in another partition: the handle's own does not have it, the open ones do.
                    let tagged = try #require(pancakes.tag)
                    #expect(try await handle.resolve(tagged) == nil)
                    #expect(try await reader.resolve(tagged) == tag)
                    #expect(try await reader.resolve(Reference<Tag>("nobody")) == nil)

                    // A write not yet acknowledged resolves at once (the local view), as a draft does.
                    try await handle.put(Folder(_id: "f2", name: "Baking"))
                    #expect(try await handle.resolve(Reference<Folder>("f2"))?.name == "Baking")
                    try await reader.saveDraft([try Folder(_id: "f3", name: "Draft").putOperation()], in: mine)
                    #expect(try await reader.resolve(Reference<Folder>("f3"))?.name == "Draft")

                    // A document of a known type that is not that model is an error that names it.
                    try await handle.write([.put(try ObjectKey(collection: "item", id: "n3"), body: ["type": "note", "folder": "f1"])])
                    await #expect(throws: SyncError.self) { try await handle.models(Self.items) }
                    #expect(Self.items.modelType(of: ["type": "note"]) == Note.self)
                    #expect(Self.items.modelType(of: ["type": "sticker"]) == nil)
                }
            }
        }
    }
}
