import PartitionSync

@testable import SyncServer
import Testing

@Suite("Memory release policy")
struct MemoryReleasePolicyTests {
    /// The policy's answers to a sequence of session counts.
    static func decisions(_ counts: [Int], minimumPeak: Int = 64, periodic: Int = 1_000) -> [Bool] {
        var policy = MemoryReleasePolicy(minimumPeak: minimumPeak, periodic: periodic)
        return counts.map { policy.check(sessions: $0) }
    }

    @Test("memory is released once the sessions fall to half their peak, or periodically; a small load alone does not trigger it")
    func decisions() {
        // A load rises to 1,000 and ends: one release at the fall to half, one more at zero.
        let load = Array(stride(from: 0, through: 1_000, by: 100)) + [600, 400, 400, 0, 0]
        #expect(Self.decisions(load) == Array(repeating: false, count: 12) + [true, false, true, false])
        // A small load is not worth one.
        #expect(Self.decisions([0, 40, 0, 10, 0]) == [false, false, false, false, false])
        // Periodically, whatever happens.
        #expect(Self.decisions([5, 5, 5, 5, 5, 5], periodic: 3) == [false, false, true, false, false, true])
    }
}
