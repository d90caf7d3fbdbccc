import Foundation
import PartitionSync

/// What wikis and pages share (the seed's `WikiItem`): a `type`, Markdown, and the times the
/// server sets: `created_at` when the document is made and `updated_at` whenever a user
/// changes it (``TouchWikiTriggers/timestamps``). Clients never write those two; a write that
/// changes them is refused.
public protocol WikiItem: SyncModel {
    var markdown: String? { get }
    var created_at: Date? { get }
    var updated_at: Date? { get }
}

/// A wiki, in `wiki=<id>`: its id is its partition's value (a UUID). Its owner (`owner_id`) and
/// its members read and write its pages; only the owner changes `members`, or deletes it.
/// Users are named by their account's email, lowercased.
public struct Wiki: WikiItem, Hashable {
    public static let collection = "wiki"

    public var _id: String
    public var type: String = "wiki"
    public var title: String
    public var owner_id: String
    public var members: [String]?
    public var markdown: String?
    public var created_at: Date?
    public var updated_at: Date?

    public init(id: String = UUID().uuidString.lowercased(), title: String, owner: String, members: [String]? = nil, markdown: String? = nil) {
        self._id = id
        self.title = title
        self.owner_id = owner
        self.members = members
        self.markdown = markdown
    }

    /// Whether `name` (an email, lowercased) may read and write the wiki.
    public func admits(_ name: String) -> Bool {
        owner_id == name || (members ?? []).contains(name)
    }

    /// Everyone the wiki admits.
    public var everyone: Set<String> { Set([owner_id] + (members ?? [])) }

    /// The id of the page `name` of this wiki.
    public func pageID(_ name: String) -> String { WikiPage.id(wiki: _id, name: name) }
}

/// A page, in its wiki's partition. Its id is `<wikiId>:<page name>`, so a `[[link]]` names
/// the page it leads to without a query; `wiki_id` repeats the prefix, as the seed's map
/// functions wanted: a reference to its wiki (in JSON, the wiki's id).
public struct WikiPage: WikiItem, Hashable {
    public static let collection = "page"

    public var _id: String
    public var type: String = "page"
    public var wiki_id: Reference<Wiki>
    public var markdown: String?
    public var created_at: Date?
    public var updated_at: Date?

    public init(wiki: String, name: String, markdown: String) {
        self._id = WikiPage.id(wiki: wiki, name: name)
        self.wiki_id = Reference(wiki)
        self.markdown = markdown
    }

    /// The page's id: its wiki's id, a colon, its name.
    public static func id(wiki: String, name: String) -> String { wiki + ":" + name }

    /// The page's name: its id after the wiki's.
    public var name: String {
        guard let colon = _id.firstIndex(of: ":") else { return _id }
        return String(_id[_id.index(after: colon)...])
    }

    /// The names of the pages this one links to with `[[Page Name]]`, in order, each once.
    public var links: [String] { WikiPage.links(in: markdown ?? "") }

    /// The `[[Page Name]]` links of a Markdown text, in order, each once.
    public static func links(in markdown: String) -> [String] {
        var names: [String] = []
        var rest = markdown[...]
        while let open = rest.range(of: "[["), let close = rest[open.upperBound...].range(of: "]]") {
            let name = rest[open.upperBound..<close.lowerBound].trimmingCharacters(in: .whitespaces)
            if isName(name), !names.contains(name) { names.append(name) }
            rest = rest[close.upperBound...]
        }
        return names
    }

    /// The longest page name, in characters.
    public static let maximumNameLength = 200

    /// Whether `name` can name a page: 1 to 200 characters, no control characters and no
    /// brackets (a link could not name it).
    public static func isName(_ name: String) -> Bool {
        !name.isEmpty && name.count <= maximumNameLength && name.trimmingCharacters(in: .whitespaces) == name
            && !name.unicodeScalars.contains { $0.properties.generalCategory == .control || $0 == "[" || $0 == "]" }
    }
}

/// The wikis a user may open, in `user=<userId>`, kept by the server
/// (``TouchWikiTriggers/wikiLists``): what a client reads first to know which wiki partitions
/// exist for it.
public struct WikiList: SyncModel, Hashable {
    public static let collection = "wiki_list"

    public var _id: String
    public var type: String = "wiki_list"
    public var wikis: [Entry]

    public struct Entry: Codable, Sendable, Hashable {
        public var id: String
        public var title: String
        public var owner_id: String
    }

    public init(userID: String, wikis: [Entry] = []) {
        self._id = userID
        self.wikis = wikis
    }

    /// Makes the entry of wiki `id` what `wiki` says for the user `name`: listed (by title)
    /// while the wiki exists and admits them, gone otherwise.
    mutating func record(_ wiki: Wiki?, id: String, for name: String) {
        wikis.removeAll { $0.id == id }
        guard let wiki, wiki.admits(name) else { return }
        wikis.append(Entry(id: id, title: wiki.title, owner_id: wiki.owner_id))
        wikis.sort { ($0.title, $0.id) < ($1.title, $1.id) }
    }
}

/// TouchWiki's documents by their `type` (CouchModel's factory): a wiki partition holds a
/// `wiki` and its `page`s.
public enum TouchWikiModels {
    public static let factory = ModelFactory(Wiki.self, WikiPage.self)
}

/// TouchWiki's kinds of partition.
extension PartitionKind {
    /// `wiki=<wikiId>`: a wiki and its pages.
    public static let wiki = PartitionKind("wiki")
    /// `user=<userId>`: the user's list of wikis.
    public static let user = PartitionKind("user")
}

/// TouchWiki's partitions.
public enum TouchWikiPartitions {
    /// `wiki=<wikiId>`: a wiki and its pages.
    public static func wiki(_ id: String) throws -> Partition { try PartitionKind.wiki(id) }

    /// `user=<userId>`: the user's list of wikis.
    public static func user(_ userID: String) throws -> Partition { try PartitionKind.user(userID) }
}
