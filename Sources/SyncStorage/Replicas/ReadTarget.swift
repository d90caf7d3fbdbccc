/// What a page read from a replica must include: the primary's WAL position (in bytes,
/// `pg_lsn - '0/0'`) and timeline when the snapshot or catch-up started. Every commit its client
/// has seen, and the head it must reach, are before that position on that timeline.
package struct ReadTarget: Sendable, Hashable {
    package var position: Int64
    /// The primary's timeline (0: not known; then not compared).
    package var timeline: Int32

    package init(position: Int64, timeline: Int32) {
        self.position = position
        self.timeline = timeline
    }
}
