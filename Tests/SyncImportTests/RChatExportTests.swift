import Foundation
import SyncImport
import SyncProtocol
import Testing

/// A small RChat data set from scripts/generate_rchat_export.py (seed 20261125: 3 users,
/// 2 conversations, 6 messages), committed in the generator's formats: all of them must
/// decode to the same bodies.
@Suite("The RChat export")
struct RChatExportTests {
    static let root = Fixtures.path("rchat")
    static let collections = ["User", "Chatster", "ChatMessage"]
    static let formats = ["mongodump/rchat/%@.bson", "mongoexport-relaxed/%@.json", "mongoexport-canonical/%@.json",
                          "mongoexport-canonical-array/%@.json"]

    /// Pictures become blob references (what `psync import` will upload), everything else
    /// binary inline as base64.
    static let mapper = JSONMapper(
        policy: ImportPolicy(
            binary: BinaryPolicy()
                .storing("*.picture", as: .blob(reference))
                .storing("userPreferences.avatarImage.picture", as: .blob(reference))))

    /// A blob reference to the bytes. Its digest stands in for their SHA-256 (the test target
    /// has no hash function; the import command will use swift-crypto's).
    @Sendable static func reference(_ field: BinaryField) -> JSONValue {
        let bytes = field.binary.bytes
        var digest = [UInt8](repeating: 0, count: 32)
        for (index, byte) in bytes.enumerated() { digest[index % 32] = digest[index % 32] &* 31 &+ byte }
        return BlobReference(digest: BlobDigest(sha256: digest), length: Int64(bytes.count), contentType: "image/jpeg").json
    }

    static func bodies(_ collection: String, format: String) throws -> [JSONValue] {
        let path = (root as NSString).appendingPathComponent(String(format: format, collection))
        return try Fixtures.readAll(path).map { .object(try $0.body(collection: collection, mapper: mapper)) }
    }

    @Test("the mongodump, relaxed, canonical and --jsonArray exports decode to the same JSON", arguments: collections)
    func formatsAgree(collection: String) throws {
        let fromDump = try Self.bodies(collection, format: Self.formats[0])
        #expect(fromDump.count == ["User": 3, "Chatster": 3, "ChatMessage": 6][collection])
        for format in Self.formats.dropFirst() {
            #expect(try Self.bodies(collection, format: format) == fromDump, "\(format)")
        }
    }

    @Test("the bodies have RChat's shapes: partitions, dates, Int64 counts, blob pictures, inline thumbnails")
    func shapes() throws {
        let users = try Self.bodies("User", format: Self.formats[0])
        for user in users {
            let id = try #require(user["_id"]?.stringValue)
            #expect(id.count == 24)
            #expect(user["partition"] == .string("user=\(id)"))
            #expect(user["userName"]?.stringValue?.hasSuffix("@example.com") == true)
            let lastSeenAt = try #require(user["lastSeenAt"]?.stringValue)
            #expect(RFC3339.date(lastSeenAt) != nil)
            #expect(["On-Line", "Off-Line", "Hidden"].contains(user["presence"]?.stringValue ?? ""))
            for conversation in try #require(user["conversations"]?.arrayValue) {
                guard case .int = conversation["unreadCount"] else {
                    Issue.record("unreadCount is \(String(describing: conversation["unreadCount"]))")
                    continue
                }
                #expect(conversation["members"]?.arrayValue?.isEmpty == false)
            }
            if let avatar = user["userPreferences"]?["avatarImage"] {
                let picture = try #require(avatar["picture"]?.objectValue)
                let reference = try BlobReference(fields: picture)
                #expect(reference.contentType == "image/jpeg")
                let text = try #require(avatar["thumbNail"]?.stringValue)
                let thumbnail = try #require(Data(base64Encoded: text))
                #expect(Array(thumbnail.prefix(3)) == [0xFF, 0xD8, 0xFF])
            }
        }
        let chatsters = try Self.bodies("Chatster", format: Self.formats[1])
        #expect(Set(chatsters.compactMap { $0["_id"] }) == Set(users.compactMap { $0["_id"] }))
        #expect(chatsters.allSatisfy { $0["partition"] == "all-users=all-the-users" })
        let messages = try Self.bodies("ChatMessage", format: Self.formats[2])
        let conversationIDs = Set(users.flatMap { $0["conversations"]?.arrayValue ?? [] }.compactMap { $0["id"]?.stringValue })
        for message in messages {
            let partition = try #require(message["partition"]?.stringValue)
            #expect(partition.hasPrefix("conversation="))
            #expect(conversationIDs.contains(String(partition.dropFirst("conversation=".count))))
            let timestamp = try #require(message["timestamp"]?.stringValue)
            #expect(RFC3339.date(timestamp) != nil)
            let location = try #require(message["location"]?.arrayValue)
            #expect(location.isEmpty || (location.count == 2 && location.allSatisfy { if case .double = $0 { true } else { false } }))
        }
    }

    @Test("mongodump's metadata names the collection and its indexes", arguments: collections)
    func metadata(collection: String) throws {
        let metadata = try DumpMetadata(path: (Self.root as NSString).appendingPathComponent("mongodump/rchat/\(collection).metadata.json"))
        #expect(metadata.collectionName == collection)
        #expect(metadata.type == "collection")
        #expect(metadata.indexes.map(\.name) == ["_id_", "partition_1"])
        #expect(metadata.indexes[1].key == ["partition": .int32(1)])
        #expect(metadata.uuid?.count == 32)
    }

    @Test("users.json lists the App Services users of the User records")
    func users() throws {
        let text = try String(contentsOfFile: (Self.root as NSString).appendingPathComponent("users.json"), encoding: .utf8)
        let parsed = try JSONParser().parse(text)
        let accounts = try #require(parsed.arrayValue)
        let users = try Self.bodies("User", format: Self.formats[0])
        #expect(accounts.compactMap { $0["_id"] } == users.compactMap { $0["_id"] })
        #expect(accounts.compactMap { $0["data"]?["email"] } == users.compactMap { $0["userName"] })
        for account in accounts {
            #expect(account["type"] == "normal")
            #expect(account["identities"]?.arrayValue?.first?["provider_type"] == "local-userpass")
            #expect(account["creation_date"]?.intValue != nil)
        }
    }
}
