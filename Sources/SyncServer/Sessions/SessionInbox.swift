import DequeModule

/// The client's messages waiting for the session's reader, and whether the connection reads
/// on: a value with no lock and no I/O, kept in the session's state and changed under its
/// lock. Each method takes one happening (a message arrived, the reader looks for the next,
/// the session closed) and answers what the caller does outside the lock: start the reader,
/// pause the connection, resume it. The reader's task handle stays in the session's state,
/// kept exactly while ``readerRuns``.
///
/// The rules it keeps:
/// - a message is handled in the order it arrived, by one reader at a time, started by the
///   arrival that finds none running;
/// - while ``pauseThreshold`` messages wait (one being handled, one waiting), the connection
///   reads no more; it reads on once fewer wait, or the reader ends;
/// - the reader ends when nothing waits or the session is no longer open; what waits then is
///   dropped;
/// - once the session is no longer open, arrivals are ignored; on a close, what waits is
///   dropped.
struct SessionInbox: Sendable {
    /// How many waiting messages pause the connection's reading.
    static let pauseThreshold = 2

    /// Messages received and not yet taken by the reader, in order.
    private(set) var waiting: Deque<SyncSession.Inbound> = []
    /// A reader task is running.
    private(set) var readerRuns = false
    /// The connection reads no more until the reader takes the messages waiting.
    private(set) var readingPaused = false

    /// What to do about a message that arrived.
    struct Arrival: Equatable {
        /// Start the reader: none was running.
        var startReader: Bool
        /// Tell the connection to read no more for now.
        var pause: Bool
    }

    /// What the reader does next.
    struct Next {
        /// The message to handle; `nil`: the reader ends (and lets go of its task handle).
        var message: SyncSession.Inbound?
        /// Tell the connection to read on.
        var resumeReading: Bool
        /// The reader ends: nothing waits, or the session is no longer open.
        var readerEnds: Bool { message == nil }
    }

    /// A message arrived (or the session queued one for itself, as joining presence). Ignored
    /// once the session is not open.
    mutating func arrived(_ message: SyncSession.Inbound, sessionOpen: Bool) -> Arrival {
        guard sessionOpen else { return Arrival(startReader: false, pause: false) }
        waiting.append(message)
        let start = !readerRuns
        readerRuns = true
        // One message handled, one waiting: the connection waits for the reader.
        let pause = waiting.count >= Self.pauseThreshold
        if pause { readingPaused = true }
        return Arrival(startReader: start, pause: pause)
    }

    /// The reader looks for the next message: the first waiting while the session is open;
    /// otherwise it ends, and what waits is dropped.
    mutating func takeNext(sessionOpen: Bool) -> Next {
        let message = sessionOpen ? waiting.popFirst() : nil
        if message == nil {
            waiting.removeAll()
            readerRuns = false
        }
        // Reading goes on once fewer than the threshold wait, and when the reader ends (a
        // closing session still reads the client's close frame).
        var resume = false
        if readingPaused, message == nil || waiting.count < Self.pauseThreshold {
            readingPaused = false
            resume = true
        }
        return Next(message: message, resumeReading: resume)
    }

    /// The session closed, or its connection did: what waits is dropped. A paused connection
    /// reads on when the reader, which paused it, ends (its next look, as the session is no
    /// longer open).
    mutating func dropWaiting() {
        waiting.removeAll()
    }
}
