import PartitionSync
import SyncProtocol
@testable import SyncStorage
import Testing

/// Which operations of a many-partition apply are raises of declared counters, and what the
/// database's answer makes of each: pure, no database.
@Suite("Counter raises")
struct CounterRaisesTests {
    static let unread = ObjectCounter.arrayElements(collection: "User", path: "conversations", selectedBy: "id", field: "unreadCount")
    static let views = ObjectCounter.field(collection: "Post", path: "stats.views")

    @Test("a declaration names its counter: fields, and a selector by the declared field; nothing else")
    func matching() {
        #expect(Self.unread.matches(path("conversations[id=c-1].unreadCount")))
        #expect(!Self.unread.matches(path("conversations[3].unreadCount")))
        #expect(!Self.unread.matches(path("conversations[name=c-1].unreadCount")))
        #expect(!Self.unread.matches(path("conversations[id=c-1].unreadCount.x")))
        #expect(!Self.unread.matches(path("conversations[id=c-1]")))
        #expect(!Self.unread.matches(path("conversations")))
        #expect(!Self.unread.matches(path("other[id=c-1].unreadCount")))
        #expect(Self.views.matches(path("stats.views")))
        #expect(!Self.views.matches(path("stats")))
        #expect(!Self.views.matches(path("stats.views.x")))
        #expect(!Self.views.matches(path("stats[id=a].views")))
        let nested = ObjectCounter.arrayElements(collection: "Board", path: "lists.all", selectedBy: "key", field: "tally.n")
        #expect(nested.matches(path("lists.all[key=k].tally.n")))
        #expect(!nested.matches(path("lists.all[key=k].tally")))
    }

    @Test("declarations that could not be kept apart are refused, naming the counter: inside an index, around one, inside another, the selecting field, the server's fields")
    func checking() {
        func refusal(_ counters: [ObjectCounter], _ indexes: [ObjectIndex] = []) -> String? {
            do throws(SyncError) {
                try ObjectCounter.check(counters, indexes: indexes)
                return nil
            } catch {
                #expect(error.code == .invalidPath || error.code == .invalidCollection)
                return error.message
            }
        }
        let rchatIndexes: [ObjectIndex] = [
            .field(collection: "User", path: "userName"), .arrayElements(collection: "User", path: "conversations", field: "id"),
        ]
        #expect(refusal([Self.unread, Self.views], rchatIndexes) == nil)
        // An index of the whole array, or of the counter's own field in its elements.
        #expect(refusal([Self.unread], [.arrayContains(collection: "User", path: "conversations")])?.contains("index") == true)
        #expect(refusal([Self.unread], [.arrayElements(collection: "User", path: "conversations", field: "unreadCount")]) != nil)
        #expect(refusal([Self.views], [.field(collection: "Post", path: "stats")]) != nil)
        #expect(refusal([Self.views], [.field(collection: "Post", path: "stats.views.x")]) != nil)
        // The same places in another collection are not in the way.
        #expect(refusal([Self.views], [.field(collection: "Page", path: "stats")]) == nil)
        #expect(refusal([Self.views, .field(collection: "Post", path: "stats")])?.contains("overlaps the counter") == true)
        #expect(refusal([Self.views, Self.views]) != nil)
        #expect(refusal([.arrayElements(collection: "User", path: "conversations", selectedBy: "id", field: "id")]) != nil)
        #expect(refusal([.arrayElements(collection: "User", path: "conversations", selectedBy: "id", field: "id.n")]) != nil)
        #expect(refusal([.arrayElements(collection: "User", path: "conversations", selectedBy: "a.b", field: "n")]) != nil)
        #expect(refusal([.field(collection: "User", path: "partition")]) != nil)
        #expect(refusal([.field(collection: "User", path: "_id")]) != nil)
        #expect(refusal([.field(collection: "User", path: "@expiresAt")]) != nil)
        #expect(refusal([.field(collection: "bad-name", path: "n")]) != nil)
        #expect(refusal([.field(collection: "User", path: "a..b")])?.contains("User.a..b") == true)
    }

    static func user(_ id: String) -> ObjectKey { key("User", id) }
    static func raise(_ id: String, _ room: String, by: Int64 = 1) -> SyncOperation {
        .increment(user(id), path: path("conversations[id=\(room)].unreadCount"), by: .int(by))
    }

    @Test("an object is raised apart only when every operation on it is an integer increment of a counter; the others keep all their operations, in order")
    func splitting() {
        let a = partition("user=a"), b = partition("user=b"), c = partition("user=c")
        let operations: [Partition: [SyncOperation]] = [
            b: [Self.raise("b", "r1"), Self.raise("b", "r2", by: 2), Self.raise("b", "r1", by: 3)],
            a: [Self.raise("a", "r1")],
            c: [
                Self.raise("c", "r1"), .set(Self.user("c"), path: path("presence"), value: "On-Line"),
                .increment(Self.user("d"), path: path("conversations[id=r1].unreadCount"), by: .double(0.5)),
                .increment(Self.user("e"), path: path("conversations[0].unreadCount"), by: .int(1)),
                .increment(Self.user("f"), path: path("logins"), by: .int(1)),
                .increment(key("Post", "p"), path: path("stats.views"), by: .int(4)),
            ],
        ]
        let raises = CounterRaises(operations, counters: [Self.unread, Self.views])
        #expect(raises.objects == [
            .init(partition: a, key: Self.user("a"), counters: [.init(path: path("conversations[id=r1].unreadCount"), increments: [1])]),
            .init(partition: b, key: Self.user("b"), counters: [
                .init(path: path("conversations[id=r1].unreadCount"), increments: [1, 3]),
                .init(path: path("conversations[id=r2].unreadCount"), increments: [2]),
            ]),
            .init(partition: c, key: key("Post", "p"), counters: [.init(path: path("stats.views"), increments: [4])]),
        ])
        #expect(raises.rest == [c: Array(operations[c]![0..<5])])
        #expect(raises.operations(of: [1]) == [b: [Self.raise("b", "r1"), Self.raise("b", "r1", by: 3), Self.raise("b", "r2", by: 2)]])
        #expect(CounterRaises(operations, counters: []).isEmpty)
        #expect(CounterRaises(operations, counters: []).rest == operations)
    }

    static func reading(_ value: JSONValue?, kept: Int = 0, isKept: Bool = false, place: [String]? = ["conversations", "0", "unreadCount"], partition: String = "user=a", live: Bool = true)
        -> CounterRaises.Reading
    {
        .init(partition: partition, live: live, kept: kept, isKept: isKept, place: place, value: value)
    }

    @Test("the database's answer decides: raised apart with the sums, or applied whole for anything the operations must answer themselves")
    func deciding() {
        let a = partition("user=a")
        let one = CounterRaises.Object(partition: a, key: Self.user("a"), counters: [.init(path: path("conversations[id=r1].unreadCount"), increments: [2, 3])])
        func decide(_ reading: CounterRaises.Reading?, limit: Int = 32) -> (entries: [CounterRaises.Entry], whole: [Int]) {
            CounterRaises.decide([one], readings: [[reading]], limit: limit)
        }
        let raised = decide(Self.reading(.int(7)))
        #expect(raised.whole.isEmpty)
        #expect(raised.entries == [.init(partition: a, key: Self.user("a"), counters: [
            "conversations[id=r1].unreadCount": [["conversations", "0", "unreadCount"], 12],
        ])])
        // A missing field is created, as the increment would.
        #expect(decide(Self.reading(nil)).entries.first?.counters.first?.value == [["conversations", "0", "unreadCount"], 5])
        // Not stored, in another partition, deleted, leading nowhere, not an integer, overflowing.
        #expect(decide(nil).whole == [0])
        #expect(decide(Self.reading(.int(1), partition: "user=b")).whole == [0])
        #expect(decide(Self.reading(.int(1), live: false)).whole == [0])
        #expect(decide(Self.reading(nil, place: nil)).whole == [0])
        #expect(decide(Self.reading(.double(1.5))).whole == [0])
        #expect(decide(Self.reading(.string("1"))).whole == [0])
        #expect(decide(Self.reading(.null)).whole == [0])
        #expect(decide(Self.reading(.int(.max - 4))).whole == [0])
        #expect(decide(Self.reading(.int(.max - 5))).entries.count == 1)
        // The limit of kept counters: a new one up to it, one past it goes whole; a kept one
        // raised again adds none.
        #expect(decide(Self.reading(.int(1), kept: 31)).entries.count == 1)
        #expect(decide(Self.reading(.int(1), kept: 32)).whole == [0])
        #expect(decide(Self.reading(.int(1), kept: 32, isKept: true)).entries.count == 1)
        #expect(decide(Self.reading(.int(1)), limit: 0).whole == [0])
        // Increments that change nothing write nothing.
        let zero = CounterRaises.Object(partition: a, key: Self.user("a"), counters: [.init(path: path("conversations[id=r1].unreadCount"), increments: [2, -2])])
        let unchanged = CounterRaises.decide([zero], readings: [[Self.reading(.int(7))]], limit: 32)
        #expect(unchanged.entries.isEmpty && unchanged.whole.isEmpty)
        #expect(CounterRaises.decide([zero], readings: [[Self.reading(nil)]], limit: 32).entries.count == 1)
    }

    @Test("a counter's steps for the database: names as strings, selectors as field and value")
    func steps() {
        #expect(CounterRaises.steps(of: path("conversations[id=c-1].unreadCount")) == ["conversations", ["f": "id", "v": "c-1"], "unreadCount"])
        #expect(CounterRaises.steps(of: path("stats.views")) == ["stats", "views"])
    }
}
