import SyncStorage
import Testing

/// Which commits a partition's history has, without a database: the timeline of each version,
/// and the cursors (version, timeline) it continues from.
@Suite("Partition history")
struct PartitionHistoryTests {
    /// Versions 1-8 on timeline 0 (before migration 0014), 9-12 on 3, 13-20 (the head) on 5.
    let history = PartitionHistory(timeline: 5, past: [.init(timeline: 0, through: 8), .init(timeline: 3, through: 12)])

    @Test("each version's timeline is that of the branch it falls in, the edges included")
    func timelines() {
        let cases: [(Int64, Int32)] = [(1, 0), (8, 0), (9, 3), (12, 3), (13, 5), (20, 5), (21, 5)]
        for (version, timeline) in cases {
            #expect(history.timeline(of: version) == timeline, "version \(version)")
        }
        #expect(PartitionHistory().timeline(of: 7) == 0)
        #expect(PartitionHistory(timeline: 2).timeline(of: 7) == 2)
    }

    @Test("a cursor is of this history when its version is at most the head and was written on its timeline")
    func contains() {
        let inside: [(Int64, Int32)] = [(0, 0), (0, 9), (5, 0), (8, 0), (9, 3), (12, 3), (13, 5), (20, 5)]
        for (version, timeline) in inside {
            #expect(history.contains(version: version, timeline: timeline, head: 20), "v\(version) on \(timeline)")
        }
        // The lost tails: of timeline 0 after 8 (its last commits the failover to 3 lost), of 3
        // after 12, of a timeline this partition never had, and ahead of the head.
        let outside: [(Int64, Int32)] = [(9, 0), (13, 0), (13, 3), (20, 3), (5, 3), (10, 5), (10, 4), (21, 5), (15, 7)]
        for (version, timeline) in outside {
            #expect(!history.contains(version: version, timeline: timeline, head: 20), "v\(version) on \(timeline)")
        }
    }

    @Test("a position read elsewhere is admitted ahead of the head only on the partition's current timeline")
    func admits() {
        // A newer read than this one: ahead of its head, on the timeline written now.
        #expect(history.admits(version: 25, timeline: 5, head: 20))
        // Ahead on another timeline: from a tail a failover lost.
        #expect(!history.admits(version: 25, timeline: 3, head: 20))
        #expect(!history.admits(version: 25, timeline: 0, head: 20))
        // At or below the head, exactly as contains.
        #expect(history.admits(version: 12, timeline: 3, head: 20))
        #expect(!history.admits(version: 13, timeline: 3, head: 20))
        #expect(history.admits(version: 0, timeline: 9, head: 20))
    }
}
