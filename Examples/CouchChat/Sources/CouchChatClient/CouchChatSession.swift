import CouchChat
import Foundation
import SyncClient
import SyncProtocol

/// A CouchChat user's client, on the PartitionSync SDK: the room list, rooms, messages with
/// pictures (blobs, uploaded before the message that shows them, also when written offline).
public struct CouchChatSession: Sendable {
    public let client: SyncClient

    /// A client whose store and credentials are in `home`.
    public init(server: URL, home: String) throws {
        var configuration = SyncClientConfiguration(serverURL: server, storePath: home + "/store.sqlite")
        configuration.maximumReconnectDelay = .seconds(2)
        client = try SyncClient(configuration: configuration)
    }

    /// The signed-in user's id and email; `unauthenticated` when nobody is signed in.
    public func me() async throws -> (id: String, email: String) {
        guard let id = await client.userID, let email = await client.email else {
            throw SyncError(.unauthenticated, "not signed in: run `couchchat register` or `couchchat login` first")
        }
        return (id, email)
    }

    /// Opens partitions and waits, while online, until they are up to date.
    public func sync(_ partitions: [Partition], wait: Duration) async throws {
        for partition in partitions { _ = try await client.open(partition) }
        guard await client.waitUntilOnline(timeout: wait) else { return }
        for partition in partitions { _ = await client.waitUntilUpToDate(partition, timeout: wait * 2) }
    }

    /// Lets `owners` (emails), or anyone, invite this user into rooms.
    public func acceptInvitations(from owners: [String], fromAnyone: Bool) async throws {
        let (_, email) = try await me()
        let profile = Profile(email: email, acceptsAnyInvitation: fromAnyone ? true : nil, acceptsInvitationsFrom: owners.isEmpty ? nil : owners)
        try await client.write([try profile.putOperation()], in: CouchChatPartitions.profiles)
    }

    /// The rooms this user is in, as the server lists them.
    public func rooms(wait: Duration) async throws -> [RoomList.Entry] {
        let (id, _) = try await me()
        let partition = try CouchChatPartitions.user(id)
        try await sync([partition], wait: wait)
        return try RoomList.decode(try await client.objects(in: partition)).first?.rooms ?? []
    }

    /// The room of this user's list whose id or title is `nameOrID` (an id first, then a title,
    /// compared case-insensitively); `not_found` when none is, `bad_request` when several
    /// rooms have that title (their ids are in the message).
    public func room(named nameOrID: String, wait: Duration) async throws -> RoomList.Entry {
        let rooms = try await rooms(wait: wait)
        if let room = rooms.first(where: { $0.id == nameOrID }) { return room }
        let titled = rooms.filter { $0.title.caseInsensitiveCompare(nameOrID) == .orderedSame }
        guard let first = titled.first else {
            throw SyncError(.notFound, "you are in no room called \(nameOrID) (couchchat rooms lists yours)")
        }
        guard titled.count == 1 else {
            throw SyncError(.badRequest, "several of your rooms are called \(nameOrID): give one of their ids, \(titled.map(\.id).joined(separator: ", "))")
        }
        return first
    }

    /// Creates a room owned by this user, inviting `invitees` (emails); returns its id.
    @discardableResult
    public func createRoom(title: String, inviting invitees: [String]) async throws -> String {
        let (_, email) = try await me()
        let id = UUID().uuidString.lowercased()
        let room = Room(id: id, title: title, owner: email, pendingMembers: invitees.isEmpty ? nil : invitees)
        try await client.write([try room.putOperation()], in: try CouchChatPartitions.room(id))
        return id
    }

    /// Leaves a room. A member removes themselves from its members (the one change of a room a
    /// member may make); an owner from its owners and members, the room passing to its first
    /// member when no other owner is left, and going when nobody is.
    public func leave(_ room: String, wait: Duration) async throws {
        let (_, email) = try await me()
        let partition = try CouchChatPartitions.room(room)
        try await sync([partition], wait: wait)
        guard var stored = try Room.decode(try await client.objects(in: partition)).first(where: { $0._id == room }) else {
            throw SyncError(.notFound, "room \(room) is not in the local copy yet")
        }
        let key = try ObjectKey(collection: Room.collection, id: room)
        guard stored.owners.contains(email) else {
            try await client.write([.arrayRemove(key, path: .field("members"), match: .string(email))], in: partition)
            return
        }
        let owners = stored.owners.filter { $0 != email }
        let members = (stored.members ?? []).filter { $0 != email }
        guard let heir = owners.first ?? members.first else {
            try await client.write([.delete(key)], in: partition)
            return
        }
        stored.owners = owners.isEmpty ? [heir] : owners
        stored.members = members.isEmpty ? nil : members
        try await client.write([try stored.putOperation()], in: partition)
    }

    /// Writes a message into a room, with a picture if `photo` names a file.
    public func send(_ markdown: String, to room: String, photo: URL? = nil) async throws {
        let (_, email) = try await me()
        var chat = Chat(room: room, author: email, markdown: markdown)
        if let photo { chat.photo = try await client.attach(contentsOf: photo, contentType: Self.mediaType(of: photo)) }
        try await client.write([try chat.putOperation()], in: try CouchChatPartitions.room(room))
    }

    /// A room's messages, oldest first.
    public func messages(in room: String, wait: Duration) async throws -> [Chat] {
        let partition = try CouchChatPartitions.room(room)
        try await sync([partition], wait: wait)
        return try Chat.decode(try await client.objects(in: partition)).sorted { $0.created_at < $1.created_at }
    }

    /// The picture of a message (downloaded once, then from the local cache).
    public func photo(of chat: Chat) async throws -> Data? {
        guard let photo = chat.photo else { return nil }
        return try await client.blob(photo, in: try CouchChatPartitions.room(chat.channel_id))
    }

    static func mediaType(of file: URL) -> String {
        switch file.pathExtension.lowercased() {
        case "jpg", "jpeg": "image/jpeg"
        case "png": "image/png"
        case "gif": "image/gif"
        default: "application/octet-stream"
        }
    }
}
