import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// What a validator reads: the upload's own changes, on top of what the transaction wrote
/// before it, and nothing of an upload that was refused.
@Suite("What validators read")
struct ValidationReadTests {
    /// A message needs its room to exist (as a validator reads it); a message marked `poison`
    /// is refused.
    static let rooms: ObjectStore.Validator = { changes, transaction in
        for change in changes where change.key.collection == "Message" {
            guard let body = change.after.body else { continue }
            guard body["poison"] != .bool(true) else { throw SyncError(.validationFailed, "poison") }
            guard let room = body["room"]?.stringValue,
                try await transaction.load([key("Room", room)])[key("Room", room)]?.state.body != nil
            else { throw SyncError(.validationFailed, "no room \(body["room"]?.stringValue ?? "?")") }
        }
    }

    static func upload(_ id: String, _ operations: [SyncOperation]) -> Upload {
        Upload(partition: partition("team=t"), operations: operations, principal: "p", requestId: id)
    }

    @Test("an upload that makes a room and puts a message into it is taken; one whose room is missing is not")
    func ownChanges() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let both = try await store.upload(
                Self.upload("1", [.put(key("Room", "r1"), body: [:]), .put(key("Message", "m1"), body: ["room": "r1"])]), validate: Self.rooms)
            #expect(both.changes.count == 2)
            // The message first: it still sees the room the same upload makes after it.
            let reversed = try await store.upload(
                Self.upload("2", [.put(key("Message", "m2"), body: ["room": "r2"]), .put(key("Room", "r2"), body: [:])]), validate: Self.rooms)
            #expect(reversed.changes.count == 2)
            await #expect(throws: SyncError.self) {
                try await store.upload(Self.upload("3", [.put(key("Message", "m3"), body: ["room": "r3"])]), validate: Self.rooms)
            }
        }
    }

    @Test("in a batch, a refused upload's room is not there for the uploads after it")
    func refusedUploadLeavesNothing() async throws {
        try await TestDatabase.with { db in
            let store = db.store()
            let results = try await store.upload(
                batch: [
                    Self.upload("a", [.put(key("Room", "r1"), body: [:]), .put(key("Message", "m1"), body: ["room": "r1", "poison": true])]),
                    Self.upload("b", [.put(key("Message", "m2"), body: ["room": "r1"])]),
                    Self.upload("c", [.put(key("Room", "r2"), body: [:])]),
                    Self.upload("d", [.put(key("Message", "m3"), body: ["room": "r2"])]),
                ], validate: Self.rooms)
            let outcomes = results.map { result in
                switch result {
                case .success: "ack"
                case .failure(let error): error.message
                }
            }
            #expect(outcomes == ["poison", "no room r1", "ack", "ack"])
            #expect(try await db.body(of: key("Room", "r1")) == nil)
            #expect(try await db.body(of: key("Message", "m3")) != nil)
        }
    }
}
