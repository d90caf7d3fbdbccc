import DequeModule

/// The client's messages waiting for the session's reader, and whether the connection reads
/// on: a value with no lock and no I/O, kept in the session's state and changed under its
/// lock. Each method takes one happening (a message arrived, the reader looks for the next,
/// the session closed) and answers what the caller does outside the lock: start the reader,
/// pause the connection, resume it. It keeps the running reader's handle (`Reader`: the
/// session's `Task`, anything in tests), made by the arrival that starts it and let go of in
/// the step that ends it, so whether a reader runs has one answer.
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
struct SessionInbox<Reader: Sendable>: Sendable {
    /// How many waiting messages pause the connection's reading.
    static var pauseThreshold: Int { 2 }

    /// Messages received and not yet taken by the reader, in order.
    private(set) var waiting: Deque<SyncSession.Inbound> = []
    /// The running reader, until the step that ends it.
    private(set) var reader: Reader?
    /// A reader is running.
    var readerRuns: Bool { reader != nil }
    /// The connection reads no more until the reader takes the messages waiting.
    private(set) var readingPaused = false

    /// What to do about a message that arrived.
    struct Arrival: Equatable {
        /// The reader was started (`startReader` called): none was running.
        var startedReader: Bool
        /// Tell the connection to read no more for now.
        var pause: Bool
    }

    /// What the reader does next.
    struct Next {
        /// The message to handle; `nil`: the reader ends (its handle is let go of).
        var message: SyncSession.Inbound?
        /// Tell the connection to read on.
        var resumeReading: Bool
        /// The reader ends: nothing waits, or the session is no longer open.
        var readerEnds: Bool { message == nil }
    }

    /// A message arrived (or the session queued one for itself, as joining presence). Ignored
    /// once the session is not open. `startReader` makes the reader when none runs; it is
    /// called under the caller's lock, so the handle is kept before the reader can end.
    mutating func arrived(_ message: SyncSession.Inbound, sessionOpen: Bool, startReader: () -> Reader) -> Arrival {
        guard sessionOpen else { return Arrival(startedReader: false, pause: false) }
        waiting.append(message)
        let start = reader == nil
        if start { reader = startReader() }
        // One message handled, one waiting: the connection waits for the reader.
        let pause = waiting.count >= Self.pauseThreshold
        if pause { readingPaused = true }
        return Arrival(startedReader: start, pause: pause)
    }

    /// The reader looks for the next message: the first waiting while the session is open;
    /// otherwise it ends, and what waits is dropped.
    mutating func takeNext(sessionOpen: Bool) -> Next {
        let message = sessionOpen ? waiting.popFirst() : nil
        if message == nil {
            waiting.removeAll()
            reader = nil
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
