import PartitionSync

/// The declared shape and bounds of what RChat's users write (docs/APPS.md, "Bounds"),
/// checked by the engine before ``RChatValidator``. The User record is the model's, within
/// ``RChatLimits`` (``UserRecordCheck`` keeps its finer rules); a ChatMessage is the model's,
/// with room for a few small fields of a client's own.
enum RChatSchemas {
    static func all(limits: RChatLimits) -> [DocumentSchema] {
        [user(limits), message(limits), chatster(limits)]
    }

    /// The public part of a User record. No client writes a Chatster (the `all-users` rule
    /// refuses every write); this bounds what `psync import` brings in (docs/MIGRATING.md).
    static func chatster(_ limits: RChatLimits) -> DocumentSchema {
        DocumentSchema(
            collection: Chatster.collection, maximumBodyBytes: 64 << 10 + 2 * limits.maximumAvatarBytes,
            fields: [
                .init("userName", .nullable(.string(maximumLength: limits.maximumUserNameLength)), required: false),
                .init("displayName", .nullable(.string(maximumLength: limits.maximumDisplayNameLength)), required: false),
                .init("avatarImage", .nullable(photo(limits)), required: false),
                .init("lastSeenAt", .nullable(.date), required: false),
                .init("presence", .oneOf([Presence.onLine.rawValue, Presence.offLine.rawValue, Presence.hidden.rawValue])),
            ])
    }

    /// A photo: a thumbnail inline (base64, as the seed keeps it; within the avatar bound) and
    /// the picture as a blob.
    static func photo(_ limits: RChatLimits) -> DocumentSchema.Kind {
        .object([
            .init("_id", .string(maximumLength: 64)),
            .init("thumbNail", .nullable(.string(maximumLength: limits.maximumAvatarBytes)), required: false),
            .init("picture", .nullable(.blob), required: false),
            .init("date", .date),
        ])
    }

    static func message(_ limits: RChatLimits) -> DocumentSchema {
        DocumentSchema(
            collection: ChatMessage.collection, maximumBodyBytes: 128 << 10 + limits.maximumAvatarBytes,
            fields: [
                .init("author", .string(maximumLength: limits.maximumUserNameLength)),
                .init("text", .string(maximumLength: 16_384)),
                .init("image", .nullable(photo(limits)), required: false),
                .init("location", .array(of: .number, maximumCount: 2)),
                .init("timestamp", .date),
            ],
            otherFields: .allowed(maximumBytes: 1_024))
    }

    static func user(_ limits: RChatLimits) -> DocumentSchema {
        let member = DocumentSchema.Kind.object([
            .init("userName", .string(maximumLength: limits.maximumUserNameLength)),
            .init("membershipStatus", .oneOf([MembershipStatus.pending.rawValue, MembershipStatus.active.rawValue])),
        ])
        let conversation = DocumentSchema.Kind.object([
            .init("id", .string(minimumLength: 1, maximumLength: limits.maximumConversationIDLength)),
            .init("displayName", .string(maximumLength: limits.maximumDisplayNameLength)),
            .init("unreadCount", .integer(0...Int64.max)),
            .init("members", .array(of: member, maximumCount: limits.maximumMembers)),
        ])
        return DocumentSchema(
            collection: User.collection, maximumBodyBytes: 1 << 20,
            fields: [
                .init("userName", .string(maximumLength: limits.maximumUserNameLength)),
                .init("userPreferences", .nullable(.object([
                    .init("displayName", .nullable(.string(maximumLength: limits.maximumDisplayNameLength)), required: false),
                    // The avatar's exact bound (and its payload_too_large) is UserRecordCheck's;
                    // this is the outer one.
                    .init("avatarImage", .nullable(.any(maximumBytes: 2 * limits.maximumAvatarBytes)), required: false),
                ])), required: false),
                .init("lastSeenAt", .nullable(.date), required: false),
                .init("conversations", .array(of: conversation, maximumCount: 2 * limits.maximumConversations)),
                .init("presence", .oneOf([Presence.onLine.rawValue, Presence.offLine.rawValue, Presence.hidden.rawValue])),
            ])
    }
}
