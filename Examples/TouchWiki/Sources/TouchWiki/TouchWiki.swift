import Foundation
import PartitionSync

/// TouchWiki, the Couchbase Lite wiki demo, on PartitionSync: wikis with an owner and members,
/// Markdown pages named `<wikiId>:<Page Name>`, and the server's timestamps.
///
/// ```swift
/// await PartitionSyncCommand.main(application: .touchWiki)
/// ```
public enum TouchWiki {
    /// The application: rules, the validator, the triggers and the index they search by, and
    /// the web app.
    public static var application: SyncApplication {
        var permissions = Permissions()
        permissions.register(WikiRule(), for: .wiki)
        permissions.register(
            ClosureRule(read: { principal, partition, _ in principal.userID == partition.value }, write: { _, _, _ in false }),
            for: .user)
        for schema in TouchWikiSchemas.all { permissions.declare(schema) }
        permissions.refusesUndeclaredCollections = true
        permissions.add(TouchWikiValidator())
        return SyncApplication(
            permissions: permissions,
            triggers: [TouchWikiTriggers.timestamps, TouchWikiTriggers.wikiLists, TouchWikiTriggers.accounts, TouchWikiTriggers.deletedWikis],
            // What the triggers search by: the pages of a wiki, the wikis that name a user.
            indexes: [
                .field(collection: WikiPage.collection, path: "wiki_id"),
                .field(collection: Wiki.collection, path: "owner_id"),
                .arrayContains(collection: Wiki.collection, path: "members"),
            ],
            web: web)
    }

    /// The web app (`Sources/TouchWiki/Web`, plain ES modules on the JavaScript SDK), served at
    /// `/app/`: read once from the target's resources.
    static let web: WebApp = {
        guard let folder = Bundle.module.url(forResource: "Web", withExtension: nil) else {
            fatalError("TouchWiki's Web resources are missing from the bundle")
        }
        do { return try WebApp(folder: folder) } catch { fatalError("TouchWiki's web app: \(error)") }
    }()
}

extension SyncApplication {
    /// TouchWiki: `PartitionSyncCommand.main(application: .touchWiki)`.
    public static var touchWiki: SyncApplication { TouchWiki.application }
}
