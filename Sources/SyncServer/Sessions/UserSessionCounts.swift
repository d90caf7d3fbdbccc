import Locking
import PartitionSync

/// The open WebSocket sessions of each user on this instance, bounded by
/// ``SessionConfiguration/maximumSessionsPerUser``. Per instance: several instances each
/// allow the bound (docs/PROTOCOL.md). Services (API keys) are not counted.
final class UserSessionCounts: Sendable {
    private let counts = Locked<[String: Int]>([:])
    let limit: Int

    init(limit: Int) {
        self.limit = limit
    }

    /// Whether the user has as many sessions as allowed.
    func isFull(_ userID: String) -> Bool {
        counts.withLock { $0[userID, default: 0] >= limit }
    }

    /// Counts one more session of the user; `false` (and nothing counted) when it has as many
    /// as allowed.
    func claim(_ userID: String) -> Bool {
        counts.withLock { counts in
            guard counts[userID, default: 0] < limit else { return false }
            counts[userID, default: 0] += 1
            return true
        }
    }

    /// Counts one session fewer.
    func release(_ userID: String) {
        counts.withLock { counts in
            let left = counts[userID, default: 0] - 1
            counts[userID] = left > 0 ? left : nil
        }
    }
}
