extension SyncClient {
    /// Follows what other processes sharing this client's store commit (their writes queued,
    /// their pages applied): each time one did, the observers get the partitions as they are
    /// now, the waiters look again, and the uploader looks for writes to send (one another
    /// process queued and could not send is sent from here; a write sent by both is applied
    /// once, by its request id). A store in memory has no other process.
    func followOtherProcesses() async {
        var seen = storing("reading the store's version", or: nil) { try store.otherProcessesChanges() }
        guard seen != nil else { return }
        while !Task.isCancelled {
            guard (try? await Task.sleep(for: configuration.otherProcessesInterval)) != nil else { return }
            let now = storing("reading the store's version", or: seen) { try store.otherProcessesChanges() }
            guard now != seen else { continue }
            seen = now
            for partition in observers.keys { publish(partition) }
            stateChanged()
            wakeUploader()
        }
    }
}
