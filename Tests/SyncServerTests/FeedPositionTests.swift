import SyncProtocol
import SyncTesting
import Testing

@testable import SyncServer

/// Where a live feed has delivered up to: a whole version, or a version up to and including
/// one object (pages split a commit). Without a hub or a database.
@Suite("Feed position")
struct FeedPositionTests {
    let a = key("Chat", "a")
    let b = key("Chat", "b")

    @Test("positions order by version, then part of a version (by object) before all of it")
    func ordering() {
        let sorted = [
            FeedPosition(version: 3, after: nil), FeedPosition(version: 5, after: nil), FeedPosition(version: 5, after: b),
            FeedPosition(version: 4, after: a), FeedPosition(version: 5, after: a), FeedPosition(version: 3, after: b),
        ].sorted()
        #expect(sorted == [
            FeedPosition(version: 3, after: b), FeedPosition(version: 3, after: nil), FeedPosition(version: 4, after: a),
            FeedPosition(version: 5, after: a), FeedPosition(version: 5, after: b), FeedPosition(version: 5, after: nil),
        ])
        #expect(!(FeedPosition(version: 5, after: nil) < FeedPosition(version: 5, after: nil)))
        #expect(!(FeedPosition(version: 5, after: a) < FeedPosition(version: 5, after: a)))
    }

    @Test("precedes agrees with the order, for positions and objects drawn at random (seeded)")
    func precedesAgreesWithOrder() {
        var random = SeededGenerator(seed: 0x5EED_F00D)
        let keys = ["A", "B", "b", "Chat"].flatMap { collection in ["", "-", "0", "a", "é", "z"].map { key(collection, "id\($0)") } }
        for _ in 0..<2_000 {
            let after = Bool.random(using: &random) ? nil : keys.randomElement(using: &random)
            let position = FeedPosition(version: Int64.random(in: 0...4, using: &random), after: after)
            let version = Int64.random(in: 0...4, using: &random)
            let object = keys.randomElement(using: &random)!
            let expected = position < FeedPosition(version: version, after: object)
            #expect(position.precedes(version: version, key: object) == expected, "\(position) then \(version) \(object)")
        }
    }
}
