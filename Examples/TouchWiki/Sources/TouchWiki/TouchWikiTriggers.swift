import Foundation
import PartitionSync

/// TouchWiki's triggers: the timestamps, each user's list of wikis, and the pages of a
/// deleted wiki.
public enum TouchWikiTriggers {
    /// Sets `updated_at` of a wiki or page to the time of each user's change (and `created_at`
    /// when it is made): the clock of the server, not of whichever device wrote. Only users'
    /// changes count (`depth` 0), so its own writes do not call it again.
    public static let timestamps = Trigger(
        name: "touchwiki.timestamps", collections: [Wiki.collection, WikiPage.collection], operations: [.insert, .update, .replace],
        where: { event in event.depth == 0 }
    ) { event, context in
        guard let key = event.key, let partition = event.partition else { return }
        // Read under the lock the write takes (one read of the page, not two). Deleted or
        // moved since: nothing to stamp.
        guard let body = try await context.bodyForUpdate(of: key, in: partition) else { return }
        let time = JSONValue.string(JSONValue.iso8601(event.created))
        var operations = [SyncOperation.set(key, path: .field("updated_at"), value: time)]
        if body["created_at"] == nil { operations.append(.set(key, path: .field("created_at"), value: time)) }
        try await context.apply(operations, in: partition)
    }

    /// Keeps each user's wiki list (in `user=<userId>`) equal to the wikis that admit them.
    /// It lists what the wiki is now (not what the event says it was), so lists converge
    /// whatever order this and ``accounts`` run in.
    public static let wikiLists = Trigger(
        name: "touchwiki.wiki-lists", collections: [Wiki.collection],
        where: { event in
            event.operation == .insert || event.operation == .delete
                || event.changedFields.contains { ["title", "owner_id", "members"].contains($0) }
                || event.removedFields.contains { ["title", "owner_id", "members"].contains($0) }
        }
    ) { event, context in
        guard let wikiID = event.key?.id else { return }
        let now = try await context.object(Wiki.self, id: wikiID)
        let people = [try event.before(as: Wiki.self), try event.after(as: Wiki.self), now].reduce(into: Set<String>()) {
            $0.formUnion($1?.everyone ?? [])
        }
        for name in people.sorted() {
            guard let userID = try await context.userID(ofEmail: name) else { continue }
            try await context.save(try await list(of: userID, with: now, id: wikiID, for: name, context: context), in: try TouchWikiPartitions.user(userID))
        }
    }

    /// The stored list of `userID`, with the entry of wiki `wikiID` as `wiki` says.
    private static func list(of userID: String, with wiki: Wiki?, id wikiID: String, for name: String, context: TriggerContext) async throws -> WikiList {
        var list = try await context.object(WikiList.self, id: userID) ?? WikiList(userID: userID)
        list.record(wiki, id: wikiID, for: name)
        return list
    }

    /// A new account gets the list of the wikis that already name its email (someone may add
    /// a member before they sign up), once the email is verified (at registration when the
    /// server does not verify emails). A deleted account loses its list and leaves every wiki:
    /// a wiki it owned passes to its first member, or is deleted when it has none.
    public static let accounts = Trigger(name: "touchwiki.accounts", kinds: [.user]) { event, context in
        guard let userID = event.userID, let name = event.verifiedEmail?.lowercased() else { return }
        var wikis: [String: (partition: Partition, model: Wiki)] = [:]
        for found in try await context.find(Wiki.self, where: "owner_id", in: [name]) { wikis[found.model._id] = found }
        for found in try await context.find(Wiki.self, whereArray: "members", contains: .string(name)) { wikis[found.model._id] = found }
        let mine = wikis.values.sorted { $0.model._id < $1.model._id }
        switch event.operation {
        case .registered, .verified:
            var list = try await context.object(WikiList.self, id: userID) ?? WikiList(userID: userID)
            for (_, wiki) in mine { list.record(wiki, id: wiki._id, for: name) }
            try await context.save(list, in: try TouchWikiPartitions.user(userID))
        case .deleted:
            try await context.apply([.delete(try WikiList(userID: userID).objectKey)], in: try TouchWikiPartitions.user(userID))
            for (partition, var wiki) in mine {
                var members = (wiki.members ?? []).filter { $0 != name }
                if wiki.owner_id == name {
                    guard !members.isEmpty else {
                        try await context.apply([.delete(try wiki.objectKey)], in: partition)
                        continue
                    }
                    wiki.owner_id = members.removeFirst()
                }
                wiki.members = members
                try await context.save(wiki, in: partition)
            }
        default:
            break
        }
    }

    /// A deleted wiki takes its pages with it (found through the index on `wiki_id`).
    public static let deletedWikis = Trigger(
        name: "touchwiki.deleted-wikis", collections: [Wiki.collection], operations: [.delete]
    ) { event, context in
        guard let wikiID = event.key?.id else { return }
        try await context.deleteAll(WikiPage.self, where: "wiki_id", in: [wikiID])
    }
}
