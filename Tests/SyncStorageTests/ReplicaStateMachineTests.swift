import SyncStorage
import Testing

/// Which replicas are asked for pages, without a database: what the monitor observed of each
/// replica and of the primary, and the choice for a page.
@Suite("Replica state machine")
struct ReplicaStateMachineTests {
    typealias Machine = ReplicaStateMachine

    static func streaming(_ replayed: Int64, timeline: Int32 = 1) -> Machine.Observation {
        .init(inRecovery: true, replayed: replayed, receiverStatus: "streaming", receiverTimeline: timeline)
    }

    /// Two replicas, the primary on timeline 1 at position 1,000, both streaming it.
    func twoInUse(lag: Int64 = 10_000) -> Machine {
        var machine = Machine(replicas: 2, maximumLagBytes: lag)
        _ = machine.primaryObserved(timeline: 1, position: 1_000)
        _ = machine.observed(0, Self.streaming(900))
        _ = machine.observed(1, Self.streaming(1_000))
        return machine
    }

    @Test("no replica is asked before it is observed, and none when none is configured")
    func unobserved() {
        var machine = Machine(replicas: 2, maximumLagBytes: 100)
        #expect(machine.choose(target: 0, timeline: 1)?.replica == nil)
        #expect(machine.standings == [.out(.unobserved), .out(.unobserved)])
        var none = Machine(replicas: 0, maximumLagBytes: 100)
        #expect(none.choose(target: 0, timeline: 1) == nil)
    }

    @Test("a streaming standby goes in use once observed, with a change to log; observing it again changes nothing")
    func inUse() {
        var machine = Machine(replicas: 1, maximumLagBytes: 100)
        #expect(machine.primaryObserved(timeline: 1, position: 50).isEmpty)
        #expect(machine.observed(0, Self.streaming(40)) == .init(replica: 0, standing: .inUse(replayed: 40)))
        #expect(machine.observed(0, Self.streaming(45)) == nil)
        #expect(machine.standings == [.inUse(replayed: 45)])
    }

    @Test("a replica that has replayed the target is chosen first; the replicas that have take turns")
    func choice() {
        var machine = twoInUse()
        #expect(machine.choose(target: 950, timeline: 1)?.replica == 1, "only replica 1 had replayed 950")
        #expect(machine.choose(target: 950, timeline: 1)?.replica == 1)
        #expect(machine.choose(target: 900, timeline: 1)?.replica == 0)
        #expect(machine.choose(target: 900, timeline: 1)?.replica == 1, "both had: in turn")
        #expect(machine.choose(target: 900, timeline: 1)?.replica == 0)
        // Neither had replayed 2,000 when observed: one in use is still asked (its check tells).
        #expect(machine.choose(target: 2_000, timeline: 1)?.replica != nil)
    }

    @Test("a page needs no check of its own when the replica was seen past its target on its timeline: by a look, or an earlier page's check")
    func known() throws {
        var machine = twoInUse()
        let first = machine.choose(target: 1_000, timeline: 1)
        let seen = try #require(first)
        #expect(seen.replica == 1 && seen.known, "replica 1 was observed at 1,000")
        // Replica 1 out for a moment: replica 0 is the one asked.
        _ = machine.failed(1, "timeout")
        let second = machine.choose(target: 1_000, timeline: 1)
        let other = try #require(second)
        #expect(other.replica == 0 && !other.known, "replica 0 was observed at 900: it must say")
        machine.ready(0, target: 1_000)
        #expect(machine.choose(target: 1_000, timeline: 1)?.known == true)
        #expect(machine.choose(target: 1_000, timeline: 1)?.replica == 0)
        #expect(machine.choose(target: 1_001, timeline: 1)?.known == false)
        #expect(machine.choose(target: 10, timeline: 2)?.known == false, "a target on another timeline than the one the replicas were seen on")
        // A failed read forgets what it said.
        _ = machine.readFailed(0, "connection reset")
        _ = machine.observed(0, Self.streaming(900))
        _ = machine.observed(0, Self.streaming(900))
        let afterFailure = machine.choose(target: 1_000, timeline: 1)
        #expect(afterFailure?.replica == 0 && afterFailure?.known == false)
    }

    @Test("each way out of use: promoted, no receiver details, not streaming, another timeline, lagging, unreachable")
    func outOfUse() {
        let cases: [(Machine.Observation, Machine.Reason)] = [
            (.init(inRecovery: false, replayed: nil, receiverStatus: nil, receiverTimeline: nil), .notInRecovery),
            (.init(inRecovery: true, replayed: nil, receiverStatus: "streaming", receiverTimeline: 1), .notInRecovery),
            (.init(inRecovery: true, replayed: 1_000, receiverStatus: nil, receiverTimeline: nil), .noReceiver),
            (.init(inRecovery: true, replayed: 1_000, receiverStatus: "waiting", receiverTimeline: 1), .notStreaming("waiting")),
            (Self.streaming(1_000, timeline: 2), .otherTimeline(replica: 2, primary: 1)),
            (Self.streaming(1_000 - 10_001), .lagging(bytes: 10_001)),
        ]
        for (observation, reason) in cases {
            var machine = twoInUse()
            #expect(machine.observed(1, observation) == .init(replica: 1, standing: .out(reason)), "\(reason)")
            #expect(machine.choose(target: 950, timeline: 1)?.replica == 0, "\(reason): only replica 0 is asked")
            #expect(machine.choose(target: 950, timeline: 1)?.replica == 0)
        }
        var machine = twoInUse()
        #expect(machine.failed(0, "connection refused") == .init(replica: 0, standing: .out(.unreachable("connection refused"))))
        #expect(machine.failed(0, "again") == nil, "the same reason is not logged twice")
        #expect(machine.primaryObserved(timeline: 1, position: 1_000).isEmpty, "still unreachable: a look at the primary changes nothing")
        #expect(machine.failed(0, "and again") == nil)
        #expect(machine.choose(target: 0, timeline: 1)?.replica == 1)
        #expect(machine.failed(1, "gone") != nil)
        #expect(machine.choose(target: 0, timeline: 1)?.replica == nil)
    }

    @Test("lag is the primary's position less the replay: a paused replay goes out as the primary writes on, and back once it catches up")
    func lag() {
        var machine = twoInUse(lag: 500)
        #expect(machine.standings[0] == .inUse(replayed: 900))
        // The primary writes on; replica 0's replay is paused at 900.
        #expect(machine.primaryObserved(timeline: 1, position: 1_401) == [.init(replica: 0, standing: .out(.lagging(bytes: 501)))])
        #expect(machine.observed(1, Self.streaming(1_401)) == nil)
        #expect(machine.primaryObserved(timeline: 1, position: 1_500).isEmpty, "still lagging: not logged again")
        #expect(machine.choose(target: 1_500, timeline: 1)?.replica == 1)
        #expect(machine.choose(target: 1_500, timeline: 1)?.replica == 1)
        // Replay resumes.
        #expect(machine.observed(0, Self.streaming(1_500)) == .init(replica: 0, standing: .inUse(replayed: 1_500)))
        #expect(machine.choose(target: 1_500, timeline: 1)?.replica == 0)
        // A late, lower answer of the primary does not move its position back.
        _ = machine.primaryObserved(timeline: 1, position: 100)
        #expect(machine.observed(0, Self.streaming(900)) == .init(replica: 0, standing: .out(.lagging(bytes: 600))))
    }

    @Test("a new primary timeline (a failover) takes every replica out until it is seen streaming the new one; a replica left on the old history stays out")
    func failover() {
        var machine = twoInUse()
        let changes = machine.primaryObserved(timeline: 2, position: 950)
        #expect(changes.map(\.replica) == [0, 1])
        #expect(changes.allSatisfy { $0.standing == .out(.unobserved) })
        #expect(machine.choose(target: 0, timeline: 2)?.replica == nil)
        // Replica 1 received the lost tail (1,000 > 950) on timeline 1 and cannot follow.
        #expect(machine.observed(1, Self.streaming(1_000, timeline: 1)) == .init(replica: 1, standing: .out(.otherTimeline(replica: 1, primary: 2))))
        #expect(machine.observed(0, Self.streaming(960, timeline: 2)) == .init(replica: 0, standing: .inUse(replayed: 960)))
        #expect(machine.choose(target: 960, timeline: 2)?.replica == 0)
        #expect(machine.choose(target: 960, timeline: 2)?.replica == 0)
    }

    @Test("a replica whose page reads fail stays out for 1, 2, 4 … 64 looks that find it right, and a page it serves starts the count again")
    func readFailures() {
        var machine = Machine(replicas: 1, maximumLagBytes: 100)
        _ = machine.primaryObserved(timeline: 1, position: 10)
        _ = machine.observed(0, Self.streaming(10))
        /// Looks that find the replica right until it is in use again.
        func looksUntilInUse() -> Int {
            var looks = 0
            repeat { looks += 1 } while machine.observed(0, Self.streaming(10)) == nil
            return looks
        }
        var outFor: [Int] = []
        for _ in 1...8 {
            #expect(machine.readFailed(0, "function psync_replica_page does not exist") == .init(
                replica: 0, standing: .out(.unreachable("function psync_replica_page does not exist"))))
            #expect(machine.choose(target: 0, timeline: 1)?.replica == nil)
            outFor.append(looksUntilInUse() - 1)
        }
        #expect(outFor == [1, 2, 4, 8, 16, 32, 64, 64])
        machine.served(0)
        _ = machine.readFailed(0, "once")
        #expect(looksUntilInUse() - 1 == 1)
        // A look that fails is not a read failure: the next good look brings it back.
        #expect(machine.failed(0, "timeout") != nil)
        #expect(looksUntilInUse() == 1)
    }

    @Test("a primary whose timeline is not known (0) is not compared with the replicas' timelines")
    func unknownTimeline() {
        var machine = Machine(replicas: 1, maximumLagBytes: 100)
        _ = machine.primaryObserved(timeline: 0, position: 10)
        #expect(machine.observed(0, Self.streaming(10, timeline: 7)) == .init(replica: 0, standing: .inUse(replayed: 10)))
    }
}
