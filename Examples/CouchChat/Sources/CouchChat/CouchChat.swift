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
        permissions.register(ProfilesRule(), for: .profiles)
        permissions.register(RoomRule(), for: .room)
        permissions.register(UserRule(), for: .user)
        for schema in CouchChatSchemas.all { permissions.declare(schema) }
        permissions.refusesUndeclaredCollections = true
        permissions.add(CouchChatValidator())
        return SyncApplication(
            permissions: permissions,
            triggers: [CouchChatTriggers.accounts, CouchChatTriggers.friendBot, CouchChatTriggers.roomLists, CouchChatTriggers.deletedRooms],
            // What the triggers search by: the rooms that list an email, the chats of a room.
            indexes: [
                .arrayContains(collection: Room.collection, path: "owners"),
                .arrayContains(collection: Room.collection, path: "members"),
                .field(collection: Chat.collection, path: "channel_id"),
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
}

extension SyncApplication {
    /// CouchChat: `PartitionSyncCommand.main(application: .couchChat)`.
    public static var couchChat: SyncApplication { CouchChat.application }
}
