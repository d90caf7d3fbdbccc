import PartitionSync

@testable import SyncServer
import Testing

@Suite("Memory release policy")
struct MemoryReleasePolicyTests {
    /// The policy's answers to a sequence of session counts.
    static func decisions(_ counts: [Int], minimumPeak: Int = 64, periodic: Int = 1_000, followUp: Int = 0) -> [Bool] {
        var policy = MemoryReleasePolicy(minimumPeak: minimumPeak, periodic: periodic, followUp: followUp)
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

    @Test("the release at the end of a load is followed by one at each of the next checks, as the load's memory becomes free")
    func followUp() {
        // The load ends at the fourth check (released), then a release at each of the three
        // checks after it; after that only the periodic releases, which are far away here.
        let counts = [0, 500, 1_000, 0, 0, 0, 0, 0, 0, 0, 0]
        #expect(Self.decisions(counts, followUp: 3) == [false, false, false, true, true, true, true, false, false, false, false])
        // A load that starts and ends again during the follow-ups: released at its end, and
        // followed up from there.
        let again = [0, 1_000, 0, 800, 0, 0, 0, 0, 0]
        #expect(Self.decisions(again, followUp: 3) == [false, false, true, true, true, true, true, true, false])
        // A periodic release is not followed up.
        #expect(Self.decisions([5, 5, 5, 5, 5, 5, 5], periodic: 2, followUp: 1) == [false, true, false, true, false, true, false])
    }

    @Test("memory is released once the process's anonymous memory grew by the growth since just after the last release, and measured from there")
    func growth() {
        let mb = 1 << 20
        var policy = MemoryReleasePolicy(minimumPeak: 64, periodic: 1_000, followUp: 0, growth: 64 * mb)
        var decisions: [Bool] = []
        // Sessions steady (no load's end): 100 MB at the first check, then growing.
        for megabytes in [100, 163, 164] { decisions.append(policy.check(sessions: 10, anonymousBytes: megabytes * mb)) }
        #expect(decisions == [false, false, true])
        // The release gave back 40 MB: growth is measured from 124 MB now, not from 100.
        policy.released(anonymousBytes: 124 * mb)
        decisions = []
        for megabytes in [170, 188] { decisions.append(policy.check(sessions: 10, anonymousBytes: megabytes * mb)) }
        #expect(decisions == [false, true])
        // Memory in use that a release cannot give back is no reason for another.
        policy.released(anonymousBytes: 188 * mb)
        decisions = []
        for megabytes in [188, 200, 251] { decisions.append(policy.check(sessions: 10, anonymousBytes: megabytes * mb)) }
        #expect(decisions == [false, false, false])
        // Where the memory cannot be read, only the other rules apply.
        var unread = MemoryReleasePolicy(minimumPeak: 64, periodic: 1_000, followUp: 0, growth: 64 * mb)
        decisions = []
        for _ in 0..<3 { decisions.append(unread.check(sessions: 10, anonymousBytes: nil)) }
        #expect(decisions == [false, false, false])
    }
}
