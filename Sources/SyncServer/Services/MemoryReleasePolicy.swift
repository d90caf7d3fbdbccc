/// When to give freed memory back to the system: glibc's malloc keeps what a load freed in its
/// arenas, so after a thousand sessions close the process would stay at its peak size. Once
/// the sessions have fallen to half their peak since the last release (a load ended), once the
/// process's anonymous memory has grown by ``growth`` since just after the last release (work
/// that parsed and let go of much, as a trigger's runs over the records of a big room, while
/// the sessions stay), or every ``periodic`` checks in any case, the heap is trimmed. A pure
/// decision: ``MemoryReleaser`` does the trimming.
///
/// A load's memory is not all free when its sessions fall: the rest of them close, triggers
/// finish the load's events, and a cancelled `Task.sleep` keeps its task until the sleep's
/// deadline would have passed (the connection pool leaves two such sleeps behind each time a
/// connection goes back to it: its keep-alive timer and its 60-second idle timer). So the
/// release at the end of a load is followed by one at each of the next ``followUp`` checks
/// (90 seconds by default), which return that memory as it becomes free.
struct MemoryReleasePolicy {
    /// Fewer sessions than this at the peak is no load worth a release.
    let minimumPeak: Int
    /// Checks between two releases made whatever the sessions do.
    let periodic: Int
    /// Checks after the end of a load at which memory is released again.
    let followUp: Int
    /// Bytes of anonymous memory gained since just after the last release that make another.
    let growth: Int
    private var peak = 0
    private var checks = 0
    /// Follow-up releases still due after the end of the last load.
    private var followUpsLeft = 0
    /// The anonymous memory just after the last release (or at the first check).
    private var baseline: Int?

    init(minimumPeak: Int = 64, periodic: Int = 60, followUp: Int = 9, growth: Int = 64 << 20) {
        self.minimumPeak = minimumPeak
        self.periodic = periodic
        self.followUp = followUp
        self.growth = growth
    }

    /// Takes the number of open sessions and the process's anonymous memory (`nil` where it
    /// cannot be read) at a check; whether to release memory now.
    mutating func check(sessions: Int, anonymousBytes: Int? = nil) -> Bool {
        checks += 1
        peak = max(peak, sessions)
        if baseline == nil { baseline = anonymousBytes }
        if peak >= minimumPeak && sessions * 2 <= peak {
            followUpsLeft = followUp
        } else if followUpsLeft > 0 {
            followUpsLeft -= 1
        } else if let anonymousBytes, let baseline, anonymousBytes - baseline >= growth {
            // Grown since the last release: what is free in it goes back.
        } else if checks < periodic {
            return false
        }
        peak = sessions
        checks = 0
        return true
    }

    /// The anonymous memory just after a release: what later growth is measured from (memory
    /// in use stays, and is no reason for another release).
    mutating func released(anonymousBytes: Int?) {
        if let anonymousBytes { baseline = anonymousBytes }
    }
}
