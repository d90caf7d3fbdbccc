/// How ``WriteTransaction/applyInParts(_:)`` cuts a many-partition apply into parts, each
/// committed in a transaction of its own: groups of whole partitions, in order, applied one
/// after the other, and a commit once the part's groups have written `budget` bytes of bodies.
/// The first group takes ``firstGroup`` partitions; each later one as many as the last group's
/// bytes per partition say fit what is left of the part's budget (at least one, at most
/// ``largestGroup``). Pure logic: the transaction tells it what each group wrote.
struct ApplyParts: Sendable, Hashable {
    /// Partitions of the first group, before any body size is known.
    static let firstGroup = 8
    /// Partitions of a group at most, however small their objects.
    static let largestGroup = 256

    /// Bytes of bodies a part writes before it is committed.
    let budget: Int
    /// Bytes of bodies written by the part so far.
    private(set) var written = 0
    /// Bytes a partition of the last group wrote, on average (rounded down); nil before the
    /// first group.
    private(set) var bytesPerPartition: Int?

    init(budget: Int) {
        self.budget = max(1, budget)
    }

    /// How many of the `remaining` partitions the next group takes (none when none remain).
    func nextGroup(remaining: Int) -> Int {
        guard remaining > 0 else { return 0 }
        guard let bytesPerPartition else { return min(remaining, Self.firstGroup) }
        // Partitions whose operations wrote nothing (done already, by an earlier run): the largest group.
        guard bytesPerPartition > 0 else { return min(remaining, Self.largestGroup) }
        let fitting = (budget - written) / bytesPerPartition
        return min(remaining, Self.largestGroup, max(1, fitting))
    }

    /// A group of `partitions` partitions wrote `bytes` bytes of bodies; returns whether the
    /// part is now to be committed (a new part then starts).
    mutating func wrote(partitions: Int, bytes: Int) -> Bool {
        bytesPerPartition = bytes / max(1, partitions)
        written += bytes
        guard written >= budget else { return false }
        written = 0
        return true
    }
}
