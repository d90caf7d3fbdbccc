import PartitionSync

/// CouchChat, the Couchbase Sync Gateway chat demo, on PartitionSync: profiles, rooms with
/// owners and members, chat messages, and a friend bot that carries out invitations.
///
/// ```swift
/// await PartitionSyncCommand.main(application: .couchChat)
/// ```
public enum CouchChat {
    /// The application: rules, the validator, the triggers and the indexes they search by.
    public static var application: SyncApplication {
        var permissions = Permissions()
        permissions.register(ProfilesRule(), forKey: "profiles")
        permissions.register(RoomRule(), forKey: "room")
        permissions.register(UserRule(), forKey: "user")
        for schema in CouchChatSchemas.all { permissions.declare(schema) }
        permissions.refusesUndeclaredCollections = true
        permissions.add(CouchChatValidator())
        return SyncApplication(
            permissions: permissions,
            triggers: [CouchChatTriggers.accounts, CouchChatTriggers.friendBot, CouchChatTriggers.roomLists, CouchChatTriggers.deletedRooms],
            // What the triggers search by: the rooms that list an email, the chats of a room.
            indexes: [
                try! .arrayContains(collection: Room.collection, path: "owners"),
                try! .arrayContains(collection: Room.collection, path: "members"),
                try! .field(collection: Chat.collection, path: "channel_id"),
            ])
    }

    /// What CouchChat calls a user, as Sync Gateway calls them by their user name: the email
    /// of their account, lowercased. `nil` for services and deleted accounts.
    public static func name(of principal: Principal, context: some ObjectReading) async throws -> String? {
        try await context.email(of: principal)?.lowercased()
    }
}

extension SyncApplication {
    /// CouchChat: `PartitionSyncCommand.main(application: .couchChat)`.
    public static var couchChat: SyncApplication { CouchChat.application }
}
