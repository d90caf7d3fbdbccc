import PartitionSync
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import Testing

/// Two instances on one database with the version poll off: a commit through either reaches
/// the subscribers of the other through LISTEN/NOTIFY alone, also after the listeners'
/// connections were killed, and nothing committed while they reconnected is lost.
@Suite("Cross-instance delivery without the version poll", .timeLimit(.minutes(30)))
struct CrossInstanceDeliveryTests {
    @Test("commits through either instance reach the other's subscribers, before and after the LISTEN connections are terminated")
    func listenerTerminated() async throws {
        try await FaultFixtures.withTwoInstances { pair in
            var written: [ObjectKey] = []
            /// Uploads notes through one instance's writer only: the other instance can learn of
            /// them only from their notifications (its own commits to the partition would make
            /// it read the partition anyway).
            func write(_ label: String, rounds: Int, via writer: Int) async throws {
                for round in 0..<rounds {
                    let answer = try await pair.write("\(label)-\(round)", body: ["round": .int(Int64(round))], via: writer)
                    #expect(answer.isAck, "\(answer)")
                    written.append(key("Note", "\(label)-\(round)"))
                }
            }
            /// Every subscriber receives every note written so far.
            func expectDelivered(_ phase: String) async throws {
                for index in pair.subscribers.indices {
                    let expected = Set(written)
                    do {
                        try await pair.subscribers[index].sync(pair.partition, into: &pair.copies[index], timeout: .seconds(30)) { copy in
                            expected.isSubset(of: copy.objects.keys)
                        }
                    } catch is TestTimeout {
                        let missing = expected.subtracting(pair.copies[index].objects.keys).map(\.id).sorted()
                        Issue.record("\(phase): the subscriber on instance \(index == 0 ? "A" : "B") never received \(missing)")
                        throw TestTimeout(what: "deliveries (\(phase))")
                    }
                }
            }

            try await write("before-a", rounds: 3, via: 0)
            try await expectDelivered("written through A before the listeners were terminated")
            try await write("before-b", rounds: 3, via: 1)
            try await expectDelivered("written through B before the listeners were terminated")

            let terminated = try await pair.db.terminateListeners()
            #expect(terminated == 2, "terminated \(terminated) LISTEN connections")
            // Committed while the listeners are gone or reconnecting.
            try await write("meanwhile-a", rounds: 3, via: 0)
            try await write("meanwhile-b", rounds: 3, via: 1)
            let db = pair.db
            #expect(try await TestTriggers.eventually(timeout: .seconds(30)) { try await db.listenerCount() == 2 })
            try await pair.a.waitUntilReady(timeout: .seconds(30))
            try await pair.b.waitUntilReady(timeout: .seconds(30))
            try await expectDelivered("committed while the listeners reconnected")
            try await write("after-a", rounds: 3, via: 0)
            try await expectDelivered("written through A after the listeners reconnected")
            try await write("after-b", rounds: 3, via: 1)
            try await expectDelivered("written through B after the listeners reconnected")

            let stored = try await pair.db.store().snapshot(of: pair.partition)
            for copy in pair.copies { #expect(copy.objects == stored) }
        }
    }
}
