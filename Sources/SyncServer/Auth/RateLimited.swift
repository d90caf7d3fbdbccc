import PartitionSync
import SyncProtocol

/// A `rate_limited` refusal that says when to try again: answered 429 with `Retry-After`.
package struct RateLimited: Error, Sendable, CustomStringConvertible {
    /// The contract error (code `rate_limited`).
    package var error: SyncError
    /// Seconds until a retry may succeed, at least 1.
    package var retryAfter: Int

    package init(_ message: String, retryAfter: Int) {
        error = SyncError(.rateLimited, message)
        self.retryAfter = max(1, retryAfter)
    }

    package var description: String { "\(error) (retry after \(retryAfter) s)" }
}
