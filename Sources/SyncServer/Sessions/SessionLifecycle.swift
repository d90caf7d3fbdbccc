/// Where a session is in its life, and who of its tasks must act: a value with no lock and no
/// I/O, kept in the session's state and changed under its lock. Each method takes one
/// happening (work asked for, the worker done, an upload batch taken or answered, a shutdown,
/// a close) and answers what the caller does outside the lock: start a worker, wake the
/// writer, close now.
///
/// The rules it keeps:
/// - one worker at a time; work asked for while it runs makes it look once more before it
///   ends, so no request is lost between its last look and its end;
/// - the connection's writer is woken once when items wait, until it looks;
/// - a shutdown closes at once, or after the upload batch being applied is answered;
/// - once closing, no worker starts, no upload batch begins, and the close happens once;
/// - a revoked credential is answered once (`session_revoked`), and not once closing.
struct SessionLifecycle: Sendable, Equatable {
    /// No more is queued for the client, and no worker starts: a close frame is queued, the
    /// input failed, or the session's tasks ended.
    private(set) var isClosing = false
    /// The server is shutting down: the session closes once the upload batch being applied
    /// (if any) is answered.
    private(set) var isShuttingDown = false
    /// An upload batch is being applied.
    private(set) var isUploading = false
    /// A worker task is running.
    private(set) var isWorking = false
    /// Work was asked for while the worker ran.
    private var moreWork = false
    /// The connection's writer was woken and has not looked yet.
    private var writeSignalled = false
    /// The session is being closed for its revoked credential.
    private var isRevoked = false

    /// Whether the session still reads input and queues output.
    var isOpen: Bool { !isClosing && !isShuttingDown }

    // MARK: The worker

    /// Work is asked for. `true`: start a worker.
    mutating func workRequested() -> Bool {
        guard !isClosing else { return false }
        if isWorking {
            moreWork = true
            return false
        }
        isWorking = true
        return true
    }

    /// The worker begins a pass over its work: requests from now on make it look again.
    mutating func workerLooks() {
        moreWork = false
    }

    /// The worker finished a pass. `true`: it ends (nothing was asked for meanwhile, and no
    /// upload waits that it may still apply); `false`: it makes another pass.
    mutating func workerPassed(uploadsWaiting: Bool) -> Bool {
        guard !moreWork, !uploadsWaiting || !isOpen else { return false }
        isWorking = false
        return true
    }

    /// The worker was cancelled and ends.
    mutating func workerCancelled() {
        isWorking = false
    }

    // MARK: Uploads

    /// Whether an upload batch may begin: not once the session closes or the server shuts
    /// down (uploads not begun are dropped; the client resends them).
    var acceptsUploadBatch: Bool { isOpen }

    /// An upload batch begins.
    mutating func uploadBatchBegan() {
        isUploading = true
    }

    /// The batch being applied was answered. `true`: close now (the server is shutting down).
    mutating func uploadBatchAnswered() -> Bool {
        isUploading = false
        return isShuttingDown
    }

    // MARK: The writer

    /// Items were queued. `true`: wake the writer (it was not woken already).
    mutating func itemsQueued() -> Bool {
        guard !writeSignalled else { return false }
        writeSignalled = true
        return true
    }

    /// The writer looks at the queue: items queued from now on wake it again.
    mutating func writerLooks() {
        writeSignalled = false
    }

    // MARK: The end

    /// The server shuts down. `true`: close now (no upload batch is being applied).
    mutating func shutdownBegan() -> Bool {
        isShuttingDown = true
        return !isUploading
    }

    /// The session's credential was found revoked (by the registry's observer or its sweep, at
    /// once maybe). `true` the first time only, and not once closing: send `session_revoked`,
    /// then close.
    mutating func revoked() -> Bool {
        guard !isClosing, !isRevoked else { return false }
        isRevoked = true
        return true
    }

    /// The session closes. `true` the first time only: queue the close frame.
    mutating func closed() -> Bool {
        guard !isClosing else { return false }
        isClosing = true
        return true
    }
}
