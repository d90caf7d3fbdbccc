import SyncProtocol

/// Where a rule's or a validator's context reads from: the engine's committed objects or its
/// upload transaction, or, in an application's tests, the test kit's `InMemoryObjects`, so a
/// rule or a validator is tested in-process in milliseconds, without a database or a server.
///
/// ```swift
/// let objects = InMemoryObjects()
/// objects.put(Room(owners: ["ann"]), id: "r1", in: "room=r1")
/// let context = PermissionContext(source: objects)
/// #expect(try await RoomRule().canRead(.user("ann"), Partition("room=r1"), context: context))
/// ```
public protocol ObjectSource: Sendable {
    /// The live objects among `keys`, each with its partition and version; absent and deleted
    /// objects are left out.
    func liveObjects(_ keys: [ObjectKey]) async throws -> [(partition: Partition, object: SyncObject)]
    /// The email a user account registered with, or `nil` when there is no such account.
    func email(ofUser userID: String) async throws -> String?
    /// The id of the account registered with `email` (compared case-insensitively), or `nil`.
    func userID(ofEmail email: String) async throws -> String?
}
