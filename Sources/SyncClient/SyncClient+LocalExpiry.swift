import Foundation
import Logging
import SyncProtocol

extension SyncClient {
    /// Removes this client's copy of an object at `date` without deleting it on the server
    /// (Couchbase Lite's local document expiration): it no longer shows, and comes back only
    /// if the server sends it again (it changes, or the partition is downloaded anew). Pending
    /// writes to it stay queued. For a deletion everyone sees, write `@expiresAt` into the
    /// object instead (docs/PROTOCOL.md, "Expiry").
    public func expireLocally(_ key: ObjectKey, in partition: Partition, at date: Date) throws {
        try store.setLocalExpiry(partition, key, at: date)
        scheduleLocalExpiry()
    }

    /// Removes this client's copy of a whole partition at `date`: it is closed, and opening it
    /// again downloads it anew.
    public func expireLocally(_ partition: Partition, at date: Date) throws {
        try store.setLocalExpiry(partition, nil, at: date)
        scheduleLocalExpiry()
    }

    /// Purges what has expired locally, tells the observers, and waits for the next expiry.
    func purgeLocalExpiries() {
        do {
            let (changed, closed) = try store.purgeLocallyExpired()
            for partition in closed {
                upToDate.remove(partition)
                subscribed.remove(partition)
                outgoing?.yield(.unsubscribe(partition: partition))
            }
            for partition in changed { publish(partition) }
        } catch {
            logger.error("cannot purge locally expired objects", metadata: ["error": "\(error)"])
            emit(.error(SyncError(.internal, "the local store failed: \(error)"), partition: nil))
        }
        scheduleLocalExpiry()
    }

    /// Sleeps until the next local expiry, then purges.
    func scheduleLocalExpiry() {
        localExpiryTimer?.cancel()
        guard let next = storing("reading the next local expiry", or: nil, { try store.nextLocalExpiry() }) else {
            localExpiryTimer = nil
            return
        }
        let delay = max(0, next.timeIntervalSinceNow)
        localExpiryTimer = Task {
            try? await Task.sleep(for: .milliseconds(Int(delay * 1000) + 1))
            if !Task.isCancelled { self.purgeLocalExpiries() }
        }
    }
}
