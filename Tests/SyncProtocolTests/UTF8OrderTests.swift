import Foundation
import SyncProtocol
import SyncTesting
import Testing

/// Partitions and object keys sort by their UTF-8 bytes (PostgreSQL's `COLLATE "C"`), through
/// `String.utf8Precedes`.
@Suite("UTF-8 byte order")
struct UTF8OrderTests {
    static let alphabet: [String] = ["a", "b", "z", "A", "0", "-", "=", "é", "e\u{301}", "ß", "中", "😀", "\u{7F}", "ÿ"]

    @Test("utf8Precedes is the byte order of the UTF-8 text, on random strings")
    func randomPairs() {
        let seed = ProcessInfo.processInfo.environment["PSYNC_SEED"].flatMap(UInt64.init) ?? UInt64.random(in: 0...UInt64.max)
        print("UTF8OrderTests seed \(seed) (PSYNC_SEED)")
        var random = SeededGenerator(seed: seed)
        func text() -> String {
            (0..<Int.random(in: 0...6, using: &random)).map { _ in Self.alphabet.randomElement(using: &random)! }.joined()
        }
        for _ in 0..<5_000 {
            let (a, b) = (text(), text())
            #expect(a.utf8Precedes(b) == Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)), "\(a.debugDescription) < \(b.debugDescription)")
        }
        #expect(!"".utf8Precedes(""))
        #expect("".utf8Precedes("a"))
        #expect("ab".utf8Precedes("b") && !"b".utf8Precedes("ab"))
        #expect("z".utf8Precedes("é"), "é's first byte 0xC3 follows z's 0x7A")
    }

    @Test("partitions and object keys sort as PostgreSQL's COLLATE \"C\" does")
    func partitionsAndKeys() throws {
        let partitions = try ["user=é", "user=z", "user=Z", "conversation=c-2", "conversation=c-10"].map { try Partition($0) }
        #expect(partitions.sorted().map(\.description) == ["conversation=c-10", "conversation=c-2", "user=Z", "user=z", "user=é"])
        let keys = try [("User", "b"), ("ChatMessage", "z"), ("User", "a"), ("ChatMessage", "é")].map { try ObjectKey(collection: $0.0, id: $0.1) }
        #expect(keys.sorted().map(\.description) == ["ChatMessage/z", "ChatMessage/é", "User/a", "User/b"])
    }
}
