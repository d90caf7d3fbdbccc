import PartitionSync

/// What may be written, checked on every change of an upload inside its transaction (reads
/// see the upload's own changes); a refusal is `validation_failed` with the reason, and
/// nothing of the upload is written.
///
/// - A wiki lives in `wiki=<its id>`, an id without a colon. A new one names its writer as
///   `owner_id`, and does not take the id of a deleted one; the owner never changes; only the owner changes `members`
///   or deletes the wiki; members may edit its title and description.
/// - A page's id is `<wikiId>:<name>`, its `wiki_id` that prefix, which is also its
///   partition's value, and its wiki exists.
/// - `created_at` and `updated_at` are the server's (``TouchWikiTriggers/timestamps``): a
///   user's write leaves them as they are.
struct TouchWikiValidator: WriteValidator {
    /// The most members a wiki lists.
    static let maximumMembers = 1_000
    /// The longest wiki title, in characters.
    static let maximumTitleLength = 200
    /// The longest Markdown text of a page or wiki, in characters.
    static let maximumMarkdownLength = 1_000_000

    func validate(_ change: ObjectChange, in partition: Partition, by principal: Principal, context: ValidationContext) async throws {
        guard let name = try await context.emailName(of: principal) else {
            throw SyncError.refusal("only users write TouchWiki documents")
        }
        switch (partition.kind, change.key.collection) {
        case (.wiki, Wiki.collection):
            try checkWiki(change, in: partition, writer: name)
        case (.wiki, WikiPage.collection):
            try await checkPage(change, in: partition, context: context)
        default:
            throw SyncError.refusal("a \(partition.key) partition holds no \(change.key.collection) documents")
        }
        if change.after.body != nil {
            for field in ["created_at", "updated_at"] where change.before.body?[field] != change.after.body?[field] {
                throw SyncError.refusal("\(field) is set by the server: leave it out of your writes")
            }
        }
    }

    private func checkWiki(_ change: ObjectChange, in partition: Partition, writer: String) throws {
        guard change.key.id == partition.value else { throw SyncError.refusal("wiki \(change.key.id) lives in wiki=\(change.key.id)") }
        let before = try Wiki.validating(change.before.body, of: change.key)
        let after = try Wiki.validating(change.after.body, of: change.key)
        guard let after else {
            guard before?.owner_id == writer else { throw SyncError.refusal("only the owner may delete a wiki") }
            return
        }
        guard !after.title.isEmpty, after.title.count <= Self.maximumTitleLength else {
            throw SyncError.refusal("a wiki's title has 1 to \(Self.maximumTitleLength) characters")
        }
        try checkMarkdown(after.markdown)
        let members = after.members ?? []
        guard members.count <= Self.maximumMembers, members.allSatisfy(EmailName.isValid) else {
            throw SyncError.refusal("members are at most \(Self.maximumMembers) lowercase email addresses")
        }
        guard let before else {
            // Page ids are `<wikiId>:<name>`, and names may hold colons: a wiki id with one
            // would make another wiki's page ids its own (wiki `W:Notes`, page `Home`, takes
            // the id of wiki `W`'s page `Notes:Home`).
            guard !change.key.id.contains(":") else { throw SyncError.refusal("a wiki's id has no colon: page ids are <wikiId>:<name>") }
            // Whoever made a deleted wiki again would own the pages its deletion has not yet
            // taken with it (touchwiki.deleted-wikis): its id is not used again.
            guard change.before != .deleted else { throw SyncError.refusal("wiki \(change.key.id) was deleted: a new wiki takes a new id") }
            guard after.owner_id == writer else { throw SyncError.refusal("a new wiki names its creator, \(writer), as its owner") }
            return
        }
        guard after.owner_id == before.owner_id else { throw SyncError.refusal("a wiki's owner does not change") }
        guard Set(members) == Set(before.members ?? []) || writer == before.owner_id else {
            throw SyncError.refusal("only the owner changes a wiki's members")
        }
    }

    private func checkPage(_ change: ObjectChange, in partition: Partition, context: ValidationContext) async throws {
        let prefix = partition.value + ":"
        guard change.key.id.hasPrefix(prefix), WikiPage.isName(String(change.key.id.dropFirst(prefix.count))) else {
            throw SyncError.refusal("a page of wiki \(partition.value) has the id \(prefix)<name>, a name of 1 to \(WikiPage.maximumNameLength) characters without brackets")
        }
        _ = try WikiPage.validating(change.before.body, of: change.key)
        guard let page = try WikiPage.validating(change.after.body, of: change.key) else { return }
        guard page.wiki_id.id == partition.value else { throw SyncError.refusal("a page's wiki_id is its wiki's id, \(partition.value)") }
        try checkMarkdown(page.markdown)
        guard try await context.object(Wiki.self, id: partition.value) != nil else {
            throw SyncError.refusal("a page goes into a wiki that exists: create wiki \(partition.value) first")
        }
    }

    private func checkMarkdown(_ markdown: String?) throws {
        guard (markdown?.count ?? 0) <= Self.maximumMarkdownLength else {
            throw SyncError.refusal("Markdown text has at most \(Self.maximumMarkdownLength) characters")
        }
    }
}
