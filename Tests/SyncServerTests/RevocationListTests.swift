import Foundation
import Locking
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

@testable import SyncServer

/// This instance's copy of the revoked credentials, on a `MockClock`'s wall time, without the
/// table or the change listener that fill it.
@Suite("Revocation list")
struct RevocationListTests {
    /// Enough additions to make the list drop its lapsed entries (it does so every 1 024).
    static func fillToPrune(_ list: RevocationList, expires: Date?) {
        for n in 0..<1_024 { list.add([.user("filler-\(n)")], expires: expires) }
    }

    /// What observers were called with, in order.
    final class Heard: Sendable {
        private let lines = Locked<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    @Test("a credential is revoked when any of its revocations is listed; no revocations revoke nothing")
    func anyCandidateRevokes() {
        let list = RevocationList(now: MockClock().time.now)
        #expect(!list.revokes([]))
        #expect(!list.revokes([.user("u-1"), .family("f-1")]))
        list.add([.family("f-1")], expires: nil)
        #expect(list.revokes([.user("u-1"), .family("f-1")]))
        #expect(!list.revokes([.user("u-1")]))
        list.add([], expires: nil)
        #expect(list.count == 1)
    }

    @Test("the kind is part of what is revoked: the user u-1 is not the family u-1, and a family id is matched in any case")
    func kindsAreDistinct() {
        let list = RevocationList(now: MockClock().time.now)
        list.add([.user("U-1")], expires: nil)
        #expect(!list.revokes([.family("U-1")]))
        #expect(!list.revokes([Revocation(kind: .key, subject: "U-1")]))
        #expect(!list.revokes([.user("u-1")]))
        list.add([.family("F-1")], expires: nil)
        #expect(list.revokes([.family("f-1")]))
    }

    @Test("lapsed entries are dropped once enough are added: one expiring now goes, one expiring a moment later stays")
    func pruneAtTheBoundary() {
        let clock = MockClock()
        let list = RevocationList(now: clock.time.now)
        let start = clock.date
        list.add([.family("lapses-now")], expires: start.addingTimeInterval(60))
        list.add([.family("lapses-later")], expires: start.addingTimeInterval(60.001))
        list.add([.user("for-good")], expires: nil)
        clock.advance(by: .seconds(60))
        // Lapsed, but kept until the list prunes.
        #expect(list.revokes([.family("lapses-now")]))
        Self.fillToPrune(list, expires: nil)
        #expect(!list.revokes([.family("lapses-now")]))
        #expect(list.revokes([.family("lapses-later")]))
        #expect(list.revokes([.user("for-good")]))
        #expect(list.count == 2 + 1_024)
    }

    @Test("adding a revocation again keeps the later expiry, and for good wins whichever comes first", arguments: [
        [60.0, 600.0], [600.0, 60.0], [nil, 60.0], [60.0, nil],
    ] as [[Double?]])
    func laterExpiryWins(expiries: [Double?]) {
        let clock = MockClock()
        let list = RevocationList(now: clock.time.now)
        let start = clock.date
        for seconds in expiries {
            list.add([.family("f-1")], expires: seconds.map { start.addingTimeInterval($0) })
        }
        clock.advance(by: .seconds(120))
        Self.fillToPrune(list, expires: nil)
        #expect(list.revokes([.family("f-1")]))
    }

    @Test("replace puts exactly the table's entries in place of everything held")
    func replaceSwapsEverything() {
        let clock = MockClock()
        let list = RevocationList(now: clock.time.now)
        list.add([.user("old-1"), .user("old-2")], expires: nil)
        list.replace(with: [.user("new-1"): nil, .family("new-2"): clock.date.addingTimeInterval(60)])
        #expect(list.count == 2)
        #expect(!list.revokes([.user("old-1")]) && !list.revokes([.user("old-2")]))
        #expect(list.revokes([.user("new-1")]) && list.revokes([.family("new-2")]))
        list.replace(with: [:])
        #expect(list.count == 0)
        #expect(!list.revokes([.user("new-1")]))
    }

    @Test("every observer hears of each change after it is made, and may read the list from its call")
    func observersHearEveryChange() {
        let list = RevocationList(now: MockClock().time.now)
        let heard = Heard()
        list.observe { heard.append("a:\(list.revokes([.user("u-1")]))") }
        list.observe { heard.append("b:\(list.count)") }
        list.add([.user("u-1")], expires: nil)
        list.add([], expires: nil)  // not a change
        list.replace(with: [:])
        #expect(heard.all == ["a:true", "b:1", "a:false", "b:0"])
    }
}
