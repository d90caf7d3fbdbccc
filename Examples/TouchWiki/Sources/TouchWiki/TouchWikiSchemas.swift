import PartitionSync

/// The declared shape and bounds of TouchWiki's documents (docs/APPS.md, "Bounds"), checked
/// before ``TouchWikiValidator``.
enum TouchWikiSchemas {
    static let email = DocumentSchema.Kind.string(maximumLength: 254)
    static let markdown = DocumentSchema.Kind.nullable(.string(maximumLength: TouchWikiValidator.maximumMarkdownLength))

    static let all: [DocumentSchema] = [
        DocumentSchema(
            collection: Wiki.collection, maximumBodyBytes: 4 << 20,
            fields: [
                .init("type", .oneOf(["wiki"])),
                .init("title", .string(minimumLength: 1, maximumLength: TouchWikiValidator.maximumTitleLength)),
                .init("owner_id", email),
                .init("members", .nullable(.array(of: email, maximumCount: TouchWikiValidator.maximumMembers)), required: false),
                .init("markdown", markdown, required: false),
                .init("created_at", .nullable(.date), required: false),
                .init("updated_at", .nullable(.date), required: false),
            ]),
        DocumentSchema(
            collection: WikiPage.collection, maximumBodyBytes: 4 << 20,
            fields: [
                .init("type", .oneOf(["page"])),
                .init("wiki_id", .string(minimumLength: 1, maximumLength: 128)),
                .init("markdown", markdown, required: false),
                .init("created_at", .nullable(.date), required: false),
                .init("updated_at", .nullable(.date), required: false),
            ]),
    ]
}
