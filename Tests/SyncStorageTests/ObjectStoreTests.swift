import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

@Suite("Object store basics", .timeLimit(.minutes(30)))
struct ObjectStoreTests {
    @Test("a put is read back in the partition's snapshot")
    func putAndRead() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let partition = try Partition("conversation=c-1")
            let key = try ObjectKey(collection: "ChatMessage", id: "m-1")
            let result = try await store.upload(
                Upload(partition: partition, operations: [.put(key, body: ["text": "hi"])], principal: "u1", requestId: "r1"))
            #expect(result.version == 1)
            let batch = try await store.changes(in: partition, after: nil)
            #expect(batch.reset)
            #expect(batch.upToDate)
            #expect(batch.objects.count == 1)
            #expect(batch.objects.first?.body == ["_id": "m-1", "partition": "conversation=c-1", "text": "hi"])
        }
    }
}
