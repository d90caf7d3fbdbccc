import Foundation
import SyncClient
import SyncProtocol
import TouchWiki

/// A TouchWiki user's client, on the PartitionSync SDK: their wikis, pages, and drafts (the
/// seed's "edit locally, share when you save": a page being edited is a draft of the SDK,
/// kept on this device until it is published).
public struct TouchWikiSession: Sendable {
    public let client: SyncClient

    /// A client whose store and credentials are in `home`.
    public init(server: URL, home: String) throws {
        var configuration = SyncClientConfiguration(serverURL: server, storePath: home + "/store.sqlite")
        configuration.maximumReconnectDelay = .seconds(2)
        client = try SyncClient(configuration: configuration)
    }

    /// The signed-in user's id and name (their email, lowercased); `unauthenticated` when
    /// nobody is signed in.
    public func me() async throws -> (id: String, name: String) {
        guard let id = await client.userID, let email = await client.email else {
            throw SyncError(.unauthenticated, "not signed in: run `touchwiki register` or `touchwiki login` first")
        }
        return (id, email.lowercased())
    }

    /// Opens partitions and waits, while online, until they are up to date.
    public func sync(_ partitions: [Partition], wait: Duration) async throws {
        for partition in partitions { _ = try await client.open(partition) }
        guard await client.waitUntilOnline(timeout: wait) else { return }
        for partition in partitions { _ = await client.waitUntilUpToDate(partition, timeout: wait * 2) }
    }

    // MARK: Wikis

    /// The wikis this user may open, as the server lists them.
    public func wikis(wait: Duration) async throws -> [WikiList.Entry] {
        let partition = try TouchWikiPartitions.user(try await me().id)
        try await sync([partition], wait: wait)
        return try await client.open(partition).objects(WikiList.self).first?.wikis ?? []
    }

    /// A wiki's id from its id or its title (as listed in ``wikis(wait:)``).
    public func wikiID(_ idOrTitle: String, wait: Duration) async throws -> String {
        let wikis = try await wikis(wait: wait)
        if wikis.contains(where: { $0.id == idOrTitle }) { return idOrTitle }
        let titled = wikis.filter { $0.title == idOrTitle }
        guard titled.count <= 1 else { throw SyncError(.invalidOperation, "\(titled.count) wikis are titled \(idOrTitle): name one by its id") }
        return titled.first?.id ?? idOrTitle
    }

    /// Creates a wiki owned by this user; returns its id.
    @discardableResult
    public func createWiki(title: String, markdown: String? = nil) async throws -> String {
        let wiki = Wiki(title: title, owner: try await me().name, markdown: markdown)
        try await client.write([try wiki.putOperation()], in: try TouchWikiPartitions.wiki(wiki._id))
        return wiki._id
    }

    /// The wiki `id` as this client has it (after syncing it).
    public func wiki(_ id: String, wait: Duration) async throws -> Wiki {
        let partition = try TouchWikiPartitions.wiki(id)
        try await sync([partition], wait: wait)
        guard let wiki = try await client.open(partition).object(Wiki.self, id: id) else {
            throw SyncError(.notFound, "no wiki \(id) here: it does not exist, or you are not its owner or a member")
        }
        return wiki
    }

    /// Adds (or with `adding` false, removes) a member, by email. Only the owner may.
    public func setMember(_ email: String, of wikiID: String, adding: Bool, wait: Duration) async throws {
        let wiki = try await wiki(wikiID, wait: wait)
        var members = wiki.members ?? []
        let name = email.lowercased()
        members.removeAll { $0 == name }
        if adding { members.append(name) }
        // The members only: a put sets the fields it carries, the server's timestamps stay.
        try await client.write(
            [.put(try wiki.objectKey, body: ["members": .array(members.map(JSONValue.string))])], in: try TouchWikiPartitions.wiki(wikiID))
    }

    // MARK: Pages

    /// A wiki and its pages as this client shows them (drafts included), pages by name: one
    /// read of the partition, each document decoded as the model its `type` names.
    public func contents(of wikiID: String, wait: Duration) async throws -> (wiki: Wiki?, pages: [WikiPage]) {
        let partition = try TouchWikiPartitions.wiki(wikiID)
        try await sync([partition], wait: wait)
        let items = try await client.open(partition).models(TouchWikiModels.factory)
        return (items.lazy.compactMap { $0 as? Wiki }.first, items.compactMap { $0 as? WikiPage }.sorted { $0.name < $1.name })
    }

    /// The wiki a page belongs to, through its reference (`wiki_id`), from this client's copy.
    public func wiki(of page: WikiPage) async throws -> Wiki? {
        try await client.open(try TouchWikiPartitions.wiki(page.wiki_id.id)).resolve(page.wiki_id)
    }

    /// A page, by its wiki and name: found by its id, no query needed (the seed's reason for
    /// the id's shape); this device's draft of it when there is one.
    public func page(_ name: String, of wikiID: String, wait: Duration) async throws -> WikiPage? {
        let partition = try TouchWikiPartitions.wiki(wikiID)
        try await sync([partition], wait: wait)
        return try await client.open(partition).object(WikiPage.self, id: WikiPage.id(wiki: wikiID, name: name))
    }

    /// Saves a page's new text as a draft: shown on this device at once, never uploaded until
    /// ``publish(_:of:)``. Saved again, it replaces the earlier draft of the page.
    public func saveDraft(_ markdown: String, page name: String, of wikiID: String) async throws {
        let operation = try WikiPage(wiki: wikiID, name: name, markdown: markdown).putOperation()
        try await client.saveDraft([operation], in: try TouchWikiPartitions.wiki(wikiID), id: WikiPage.id(wiki: wikiID, name: name))
    }

    /// The pages with a draft on this device, as `(wiki id, page name)`.
    public func drafts() async throws -> [(wiki: String, page: String)] {
        try await client.drafts().compactMap { draft in
            guard draft.partition.kind == .wiki else { return nil }
            return (draft.partition.value, String(draft.id.dropFirst(draft.partition.value.count + 1)))
        }
    }

    /// Shares a page's draft: uploaded as one ordinary write.
    public func publish(_ name: String, of wikiID: String) async throws {
        try await client.publishDraft(WikiPage.id(wiki: wikiID, name: name))
    }

    /// Forgets a page's draft; the page shows the shared text again.
    public func discard(_ name: String, of wikiID: String) async throws {
        try await client.discardDraft(WikiPage.id(wiki: wikiID, name: name))
    }

    /// Deletes a page for everyone.
    public func deletePage(_ name: String, of wikiID: String) async throws {
        let key = try ObjectKey(collection: WikiPage.collection, id: WikiPage.id(wiki: wikiID, name: name))
        try await client.write([.delete(key)], in: try TouchWikiPartitions.wiki(wikiID))
    }

    /// What a watched page does.
    public enum PageChange: Sendable, Equatable {
        /// The page as it is now (`nil`: it does not exist, or no longer).
        case page(WikiPage?)
        /// The server ended this user's access to the wiki (`permission_revoked`).
        case accessEnded(SyncError.Code)
    }

    /// A page as it changes: now, then after every change of its text, until access to its
    /// wiki ends (the last element) or the task is cancelled.
    public func watch(_ name: String, of wikiID: String) async throws -> AsyncStream<PageChange> {
        let partition = try TouchWikiPartitions.wiki(wikiID)
        let id = WikiPage.id(wiki: wikiID, name: name)
        let events = await client.events()
        // A live query of the one page: it emits only when the page changes.
        let pages = try await client.open(partition).query(WikiPage.self, where: { $0._id == id }, sortedBy: \._id)
        return AsyncStream { continuation in
            let watching = Task {
                await withTaskGroup(of: Void.self) { group in
                    group.addTask {
                        do {
                            for try await found in pages { continuation.yield(.page(found.first)) }
                        } catch {}
                    }
                    group.addTask {
                        for await event in events {
                            if case .unsubscribed(partition, let code) = event {
                                continuation.yield(.accessEnded(code))
                                return
                            }
                        }
                    }
                    await group.next()
                    group.cancelAll()
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in watching.cancel() }
        }
    }
}
