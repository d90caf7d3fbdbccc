@_exported import RChatModel
import PartitionSync

/// The RChat back end: the reference application of PartitionSync, after the RChat article
/// (Realm Sync): its data model, permission rules, validators and triggers.
///
/// ```swift
/// let server = SyncServer(configuration: configuration, database: url, application: RChat.application, logger: logger)
/// ```
public enum RChat {
    static var allUsers: Partition { RChatPartitions.allUsers }
    static func userPartition(_ userID: String) -> Partition { RChatPartitions.user(userID) }
    static func conversationPartition(_ conversationID: String) -> Partition { RChatPartitions.conversation(conversationID) }
    static func userKey(_ id: String) -> ObjectKey { try! ObjectKey(collection: User.collection, id: id) }
    static func chatsterKey(_ id: String) -> ObjectKey { try! ObjectKey(collection: Chatster.collection, id: id) }

    /// Which collection lives under which kind of partition.
    static let collections: [PartitionKind: String] = [.user: User.collection, .conversation: ChatMessage.collection, .allUsers: Chatster.collection]

    /// The application to serve with the default ``RChatLimits``: rules, validators,
    /// triggers, indexes, and the unread counts declared counters (``ObjectCounter``: raised
    /// beside the ~80 kB records of big rooms' members, not into them).
    public static var application: SyncApplication { application(limits: RChatLimits()) }

    /// The application to serve with other limits. `membership=<conversationId>` partitions
    /// hold the server's membership records and have no rule: no client reads or writes them.
    public static func application(limits: RChatLimits) -> SyncApplication {
        var permissions = Permissions()
        permissions.register(UserPartitionRule(), for: .user)
        permissions.register(ConversationRule(), for: .conversation)
        permissions.register(AllUsersRule(), for: .allUsers)
        for schema in RChatSchemas.all(limits: limits) { permissions.declare(schema) }
        permissions.refusesUndeclaredCollections = true
        permissions.add(RChatValidator(limits: limits))
        return SyncApplication(
            permissions: permissions,
            triggers: RChatTriggers.all(limits: limits),
            indexes: [
                .field(collection: User.collection, path: "userName"),
                .arrayElements(collection: User.collection, path: "conversations", field: "id"),
                .arrayElements(collection: Membership.collection, path: "invited", field: "userName"),
            ],
            counters: [.arrayElements(collection: User.collection, path: "conversations", selectedBy: "id", field: "unreadCount")],
            importing: importMapping)
    }

    /// How `psync import` brings an Atlas Device Sync RChat in (docs/MIGRATING.md): the
    /// photos' pictures become blobs (``Photo/picture`` is a blob reference), their
    /// thumbnails stay inline as base64 (``Photo/thumbNail`` is `Data`); the `partition` field
    /// is RChat's own.
    public static var importMapping: ImportMapping {
        ImportMapping(binaryFields: [
            .init("userPreferences.avatarImage.picture", in: User.collection, as: .blob(contentType: "image/jpeg")),
            .init("avatarImage.picture", in: Chatster.collection, as: .blob(contentType: "image/jpeg")),
            .init("image.picture", in: ChatMessage.collection, as: .blob(contentType: "image/jpeg")),
            .init("userPreferences.avatarImage.thumbNail", in: User.collection, as: .base64),
            .init("avatarImage.thumbNail", in: Chatster.collection, as: .base64),
            .init("image.thumbNail", in: ChatMessage.collection, as: .base64),
        ])
    }
}

extension SyncApplication {
    /// RChat, with the default ``RChatLimits``: `PartitionSyncCommand.main(application: .rchat)`.
    public static var rchat: SyncApplication { RChat.application }
}
