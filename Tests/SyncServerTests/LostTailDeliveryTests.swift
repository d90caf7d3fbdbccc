import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Live subscribers on two instances through an asynchronous failover that lost the last
/// commits (TestDatabase+Failover), with the version poll off: the new primary's commits take
/// the lost versions, and each subscriber still ends with exactly what the database holds —
/// after a reset, never keeping a lost object nor skipping a new one.
@Suite("Live delivery across a failover's lost tail", .timeLimit(.minutes(30)))
struct LostTailDeliveryTests {
    @Test("subscribers of both instances get a reset and converge to the new primary; the instance that writes and the one that is told")
    func subscribersConverge() async throws {
        try await FaultFixtures.withTwoInstances { pair in
            func write(_ id: String, via writer: Int) async throws {
                let answer = try await pair.write(id, body: ["id": .string(id)], via: writer)
                #expect(answer.isAck, "\(answer)")
            }
            /// Every subscriber ends with exactly the stored objects; whether each saw a reset.
            func converge(_ phase: String) async throws -> [Bool] {
                let stored = try await pair.db.store().snapshot(of: pair.partition)
                var resets: [Bool] = []
                for index in pair.subscribers.indices {
                    var reset = false
                    let deadline = ContinuousClock.now + .seconds(30)
                    while pair.copies[index].objects != stored {
                        guard ContinuousClock.now < deadline,
                            let message = try? await pair.subscribers[index].next(timeout: deadline - ContinuousClock.now)
                        else {
                            Issue.record(
                                "\(phase): the subscriber on instance \(index == 0 ? "A" : "B") holds \(pair.copies[index].objects.keys.map(\.id).sorted()), the database \(stored.keys.map(\.id).sorted())")
                            throw TestTimeout(what: "convergence (\(phase))")
                        }
                        if case .changes(let batch) = message, batch.partition == pair.partition {
                            reset = reset || batch.reset
                            pair.copies[index].apply(batch)
                        }
                    }
                    resets.append(reset)
                }
                return resets
            }

            try await write("n1", via: 0)
            try await write("n2", via: 1)
            #expect(try await converge("before the failover") == [false, false])
            try await pair.db.standbyCaughtUp()
            try await write("lost1", via: 0)
            try await write("lost2", via: 0)
            _ = try await converge("the tail, before it is lost")

            // The listeners are not dropped yet (their reconnection would make every feed
            // read): the writes through A come first. Versions 3 and 4 again, then 5, right
            // after A's feed position (4, on the old timeline).
            try await pair.db.failOverLosingTail()
            try await write("new1", via: 0)
            try await write("new2", via: 0)
            try await write("new3", via: 0)
            let resets = try await converge("after the failover")
            #expect(resets == [true, true], "a subscriber converged without a reset: \(resets)")
            #expect(pair.copies.allSatisfy { $0.objects[key("Note", "lost1")] == nil })
            try await pair.db.terminateListeners()
            try await write("new4", via: 1)
            try await write("new5", via: 0)
            _ = try await converge("after the failover, live again")
        }
    }
}
