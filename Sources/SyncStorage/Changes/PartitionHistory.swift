import SyncProtocol

/// On which PostgreSQL timeline each version of a partition was written (migration 0014).
///
/// After an asynchronous failover, or a restore to a point in time, the database continues on a
/// new timeline from an earlier point: the commits after that point (the lost tail) are gone,
/// and the new primary gives its own commits the versions they had. A cursor therefore names
/// the timeline of the commit at its version too, and is continued from only when this
/// partition's history has that commit: its version is at most the head, and was written on
/// the cursor's timeline. Any other cursor gets a reset, as one from another database does.
///
/// Timeline 0 stands for the versions written before the partition kept its timelines (and for
/// cursors handed out then, which name none).
package struct PartitionHistory: Sendable, Hashable {
    /// The versions up to and including `through` (and after the previous branch's) were
    /// written on `timeline`.
    package struct Branch: Sendable, Hashable {
        package var timeline: Int32
        package var through: Int64

        package init(timeline: Int32, through: Int64) {
            self.timeline = timeline
            self.through = through
        }
    }

    /// The timeline of the versions after the last of `past`.
    package var timeline: Int32
    /// The earlier branches, in order.
    package var past: [Branch]

    package init(timeline: Int32 = 0, past: [Branch] = []) {
        self.timeline = timeline
        self.past = past
    }

    /// The history as psync_partitions stores it (`past_timelines`, `past_ends`); a stored
    /// history whose arrays differ in length is refused as corrupted.
    init(timeline: Int32, pastTimelines: [Int32], pastEnds: [Int64]) throws {
        guard pastTimelines.count == pastEnds.count else {
            throw SyncError(.internal, "a partition's timelines are corrupted (\(pastTimelines.count) timelines, \(pastEnds.count) ends)")
        }
        self.init(timeline: timeline, past: zip(pastTimelines, pastEnds).map { Branch(timeline: $0, through: $1) })
    }

    /// The timeline the commit at `version` was written on.
    package func timeline(of version: Int64) -> Int32 {
        for branch in past where version <= branch.through { return branch.timeline }
        return timeline
    }

    /// Whether the commit a cursor at `version` on `timeline` stands for is in this history,
    /// whose head is `head`. Version 0 (nothing delivered yet) is in every history.
    package func contains(version: Int64, timeline cursorTimeline: Int32, head: Int64) -> Bool {
        if version == 0 { return true }
        return version <= head && timeline(of: version) == cursorTimeline
    }

    /// Whether a position read elsewhere may be of this history, seen at `head` by a read that
    /// can be older than the position: one the history ``contains(version:timeline:head:)``,
    /// or one ahead of the head on the timeline the partition is written on now (a newer read
    /// found it). A position ahead of the head on another timeline is from commits a failover
    /// lost.
    package func admits(version: Int64, timeline positionTimeline: Int32, head: Int64) -> Bool {
        if version > head { return positionTimeline == timeline }
        return contains(version: version, timeline: positionTimeline, head: head)
    }
}
