import SyncProtocol
import Testing

@Suite("Partitions, object keys and paths")
struct IdentifierTests {
    @Test("valid partitions", arguments: ["user=5f1c", "conversation=c-42", "all-users=all-the-users", "a=b", "k_9-x=v w é"])
    func validPartition(text: String) throws {
        let partition = try Partition(text)
        #expect(partition.description == text)
    }

    @Test(
        "invalid partitions are invalid_partition",
        arguments: [
            "", "user", "=x", "user=", "User=1", "9user=1", "user=a=b", "user=a\nb", "us er=1", "user=\u{0}",
            String(repeating: "k", count: 65) + "=v", "k=" + String(repeating: "v", count: 257),
        ])
    func invalidPartition(text: String) {
        #expect(errorCode { try Partition(text) } == .invalidPartition)
    }

    @Test("partition value limits count characters, not bytes")
    func partitionLength() throws {
        _ = try Partition("k=" + String(repeating: "é", count: 256))
        _ = try Partition(String(repeating: "k", count: 64) + "=v")
    }

    @Test("collections and ids")
    func keys() throws {
        _ = try ObjectKey(collection: "ChatMessage", id: "m-1")
        _ = try ObjectKey(collection: "a" + String(repeating: "_", count: 63), id: String(repeating: "x", count: 256))
        for collection in ["", "1abc", "_x", "Chat-Message", "Chat.Message", "a" + String(repeating: "b", count: 64)] {
            #expect(errorCode { try ObjectKey(collection: collection, id: "x") } == .invalidCollection, "\(collection)")
        }
        for id in ["", String(repeating: "x", count: 257), "a\tb", "\u{0}", "a\u{7F}b", "a\u{85}b", String(repeating: "é", count: 257)] {
            #expect(errorCode { try ObjectKey(collection: "C", id: id) } == .invalidObjectID, "\(id.unicodeScalars.count) scalars")
        }
        // ASCII is checked on its bytes, anything else on its characters: 256 of them is the
        // limit however many bytes they take.
        _ = try ObjectKey(collection: "C", id: String(repeating: "é", count: 256))
        _ = try Partition("k=" + String(repeating: "é", count: 256))
        for partition in ["k=a\u{7F}b", "k=a\u{85}b", "k=" + String(repeating: "é", count: 257), "k=é=x"] {
            #expect(errorCode { try Partition(partition) } == .invalidPartition, "\(partition.unicodeScalars.count) scalars")
        }
    }

    @Test(
        "paths parse into components",
        arguments: [
            ("a", [Path.Component.field("a")]),
            ("a.b", [.field("a"), .field("b")]),
            ("a[3]", [.field("a"), .index(3)]),
            ("a[0].b", [.field("a"), .index(0), .field("b")]),
            ("conversations[id=c-42].unreadCount", [.field("conversations"), .match(field: "id", value: "c-42"), .field("unreadCount")]),
            ("a[1][2]", [.field("a"), .index(1), .index(2)]),
            ("a[k=v=w]", [.field("a"), .match(field: "k", value: "v=w")]),
            ("é.ü", [.field("é"), .field("ü")]),
        ])
    func paths(text: String, components: [Path.Component]) throws {
        let path = try Path(parsing: text)
        #expect(path.components == components)
        #expect(path.description == text)
    }

    @Test(
        "malformed paths are invalid_path",
        arguments: ["", ".a", "a.", "a..b", "[0]", "a[", "a[]", "a[-1]", "a[01]", "a[x]", "a[=v]", "a[k=]", "a]", "a[1]b", "a[1234567890]"])
    func badPaths(text: String) {
        #expect(errorCode { try Path(parsing: text) } == .invalidPath)
    }

    @Test("paths have a length and component limit")
    func pathLimits() {
        #expect(throws: SyncError.self) { try Path(parsing: String(repeating: "a", count: 1025)) }
        #expect(throws: SyncError.self) { try Path(parsing: Array(repeating: "a", count: 65).joined(separator: ".")) }
    }
}
