import PartitionSync

/// The declared shape and bounds of CouchChat's documents (docs/APPS.md, "Bounds"), checked
/// before ``CouchChatValidator``: every profile is copied to every user's device, so none can
/// be made huge for everyone; a room's lists and a chat's text are bounded too.
public enum CouchChatSchemas {
    /// The longest nickname, in characters.
    public static let maximumNickLength = 100
    /// The most addresses a profile accepts invitations from.
    public static let maximumAcceptedInviters = 100
    /// The longest chat text, in characters of Markdown.
    public static let maximumMarkdownLength = 20_000

    static let email = DocumentSchema.Kind.string(maximumLength: 254)

    public static let all: [DocumentSchema] = [
        DocumentSchema(
            collection: Profile.collection, maximumBodyBytes: 32 << 10,
            fields: [
                .init("type", .oneOf(["profile"])),
                .init("email", email),
                .init("nick", .nullable(.string(maximumLength: maximumNickLength)), required: false),
                .init("acceptsAnyInvitation", .nullable(.boolean), required: false),
                .init("acceptsInvitationsFrom", .nullable(.array(of: email, maximumCount: maximumAcceptedInviters)), required: false),
            ]),
        DocumentSchema(
            collection: Room.collection, maximumBodyBytes: 512 << 10,
            fields: [
                .init("type", .oneOf(["room"])),
                .init("channel_id", .string(minimumLength: 1, maximumLength: 128)),
                .init("title", .string(minimumLength: 1, maximumLength: CouchChatValidator.maximumTitleLength)),
                .init("owners", .array(of: email, maximumCount: CouchChatValidator.maximumPeople)),
                .init("members", .nullable(.array(of: email, maximumCount: CouchChatValidator.maximumPeople)), required: false),
                .init("pendingMembers", .nullable(.array(of: email, maximumCount: CouchChatValidator.maximumPeople)), required: false),
                .init("declinedInvitations", .nullable(.array(of: .object([
                    .init("email", email),
                    .init("reason", .string(maximumLength: 200)),
                ]), maximumCount: CouchChatValidator.maximumPeople)), required: false),
            ]),
        DocumentSchema(
            collection: Chat.collection, maximumBodyBytes: 128 << 10,
            fields: [
                .init("type", .oneOf(["chat"])),
                .init("channel_id", .string(minimumLength: 1, maximumLength: 128)),
                .init("author", email),
                .init("created_at", .date),
                .init("markdown", .string(maximumLength: maximumMarkdownLength)),
                .init("photo", .nullable(.blob), required: false),
            ]),
    ]
}
