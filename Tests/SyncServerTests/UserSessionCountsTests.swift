import Testing

@testable import SyncServer

/// The per-user bound on open sessions, without sessions: claims, releases, and many tasks
/// claiming at once.
@Suite("User session counts")
struct UserSessionCountsTests {
    @Test("a user gets as many sessions as the limit, the next is refused and nothing is counted for it", arguments: [0, 1, 3])
    func boundedPerUser(limit: Int) {
        let counts = UserSessionCounts(limit: limit)
        #expect(counts.isFull("ann") == (limit == 0))
        var claims: [Bool] = []
        for _ in 0...limit { claims.append(counts.claim("ann")) }
        #expect(claims == Array(repeating: true, count: limit) + [false])
        #expect(counts.isFull("ann"))
        // The refused claim took no place: one release makes exactly one room (none at limit 0).
        counts.release("ann")
        #expect(counts.isFull("ann") == (limit == 0))
        #expect(counts.claim("ann") == (limit > 0))
        #expect(!counts.claim("ann"))
    }

    @Test("users are counted apart: one at the limit does not take another's sessions")
    func usersApart() {
        let counts = UserSessionCounts(limit: 1)
        #expect(counts.claim("ann"))
        #expect(counts.isFull("ann"))
        #expect(!counts.isFull("bob"))
        #expect(counts.claim("bob"))
        #expect(!counts.claim("ann"))
    }

    @Test("a release without a claim gives no credit: the count never goes below zero")
    func releaseWithoutClaim() {
        let counts = UserSessionCounts(limit: 1)
        counts.release("ghost")
        counts.release("ghost")
        #expect(counts.claim("ghost"))
        #expect(!counts.claim("ghost"))
        counts.release("ghost")
        counts.release("ghost")
        #expect(counts.claim("ghost"))
        #expect(!counts.claim("ghost"))
    }

    @Test("claims from many tasks at once grant exactly the limit, and as many releases free them all", .timeLimit(.minutes(1)))
    func concurrentClaims() async {
        let counts = UserSessionCounts(limit: 50)
        let granted = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<400 { group.addTask { counts.claim("ann") } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(granted == 50)
        #expect(counts.isFull("ann"))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<50 { group.addTask { counts.release("ann") } }
        }
        #expect(!counts.isFull("ann"))
        let again = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<400 { group.addTask { counts.claim("ann") } }
            return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
        }
        #expect(again == 50)
    }
}
