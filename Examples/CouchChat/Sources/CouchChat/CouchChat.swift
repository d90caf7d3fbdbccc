import Foundation
import PartitionSync

/// CouchChat, the Couchbase Sync Gateway chat demo, on PartitionSync: profiles, rooms with
/// owners and members, chat messages, and a friend bot that carries out invitations.
///
/// ```swift
/// await PartitionSyncCommand.main(application: .couchChat)
/// ```
public enum CouchChat {
    /// The application: rules, the validator, the triggers and the indexes they search by, and
    /// the web app.
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
            ],
            web: web)
    }

    /// The web app (`Sources/CouchChat/Web`, plain ES modules on the JavaScript SDK), served at
    /// `/app/`: read once from the target's resources.
    static let web: WebApp = {
        guard let folder = Bundle.module.url(forResource: "Web", withExtension: nil) else {
            fatalError("CouchChat's Web resources are missing from the bundle")
        }
        do { return try WebApp(folder: folder) } catch { fatalError("CouchChat's web app: \(error)") }
    }()

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
