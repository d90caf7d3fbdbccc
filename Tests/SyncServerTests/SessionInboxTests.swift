import NIOCore
@testable import SyncServer
import Testing

/// The session's inbox as a value: when the reader starts and ends, when the connection pauses
/// and reads on, with no socket, lock or task (the end-to-end tests of sessions run the same
/// rules through real servers).
@Suite("Session inbox")
struct SessionInboxTests {
    private func message(_ text: String) -> SyncSession.Inbound { .message(ByteBuffer(string: text)) }

    /// The text of a message, `"presence"` for joining presence, `nil` for none.
    private func text(_ inbound: SyncSession.Inbound?) -> String? {
        switch inbound {
        case nil: nil
        case .joinPresence: "presence"
        case .message(let bytes): String(buffer: bytes)
        }
    }

    @Test("the first arrival starts the reader without pausing the connection; the next, while the reader runs, starts none")
    func firstArrivalStartsTheReader() {
        var inbox = SessionInbox()
        let first = inbox.arrived(message("a"), sessionOpen: true)
        #expect(first == .init(startReader: true, pause: false))
        #expect(inbox.readerRuns && !inbox.readingPaused)
        _ = inbox.takeNext(sessionOpen: true)
        let second = inbox.arrived(message("b"), sessionOpen: true)
        #expect(!second.startReader, "a second reader started while one runs")
    }

    @Test("while two messages wait the connection pauses")
    func secondWaitingPauses() {
        var inbox = SessionInbox()
        _ = inbox.arrived(message("a"), sessionOpen: true)
        let second = inbox.arrived(message("b"), sessionOpen: true)
        #expect(second == .init(startReader: false, pause: true))
        #expect(inbox.readingPaused)
        #expect(SessionInbox.pauseThreshold == 2)
    }

    @Test("the reader takes messages in order, and reading resumes once fewer than two wait")
    func takingResumes() {
        var inbox = SessionInbox()
        for name in ["a", "b", "c"] { _ = inbox.arrived(message(name), sessionOpen: true) }
        let first = inbox.takeNext(sessionOpen: true)  // two still wait
        #expect(text(first.message) == "a")
        #expect(!first.resumeReading, "resumed while two messages wait")
        let second = inbox.takeNext(sessionOpen: true)  // one waits
        #expect(text(second.message) == "b")
        #expect(second.resumeReading && !inbox.readingPaused)
        let third = inbox.takeNext(sessionOpen: true)
        #expect(text(third.message) == "c")
        #expect(!third.resumeReading, "resumed twice")
    }

    @Test("the reader ends when nothing waits, and the next arrival starts another")
    func readerEndsWhenEmpty() {
        var inbox = SessionInbox()
        _ = inbox.arrived(.joinPresence, sessionOpen: true)
        let first = inbox.takeNext(sessionOpen: true)
        #expect(text(first.message) == "presence" && !first.readerEnds)
        let last = inbox.takeNext(sessionOpen: true)
        #expect(last.message == nil && last.readerEnds)
        #expect(!inbox.readerRuns)
        #expect(inbox.arrived(message("a"), sessionOpen: true).startReader, "no reader started after the last one ended")
    }

    @Test("closing drops the waiting messages; the reader then ends and reading resumes")
    func closingDropsAndResumes() {
        var inbox = SessionInbox()
        for name in ["a", "b", "c"] { _ = inbox.arrived(message(name), sessionOpen: true) }
        inbox.dropWaiting()
        #expect(inbox.waiting.isEmpty)
        let next = inbox.takeNext(sessionOpen: false)
        #expect(next.message == nil && next.readerEnds)
        #expect(next.resumeReading && !inbox.readingPaused)
        #expect(!inbox.readerRuns)
    }

    @Test("a session no longer open hands the reader nothing, even with messages waiting")
    func notOpenEndsTheReader() {
        var inbox = SessionInbox()
        for name in ["a", "b"] { _ = inbox.arrived(message(name), sessionOpen: true) }
        let next = inbox.takeNext(sessionOpen: false)  // shutting down: not dropped before
        #expect(next.message == nil && next.readerEnds && next.resumeReading)
        #expect(inbox.waiting.isEmpty && !inbox.readerRuns)
    }

    @Test("arrivals after the close are ignored: queued for nobody, no reader, no pause")
    func arrivalsAfterCloseIgnored() {
        var inbox = SessionInbox()
        _ = inbox.arrived(message("a"), sessionOpen: true)
        inbox.dropWaiting()
        _ = inbox.takeNext(sessionOpen: false)
        let late = [inbox.arrived(message("b"), sessionOpen: false), inbox.arrived(message("c"), sessionOpen: false)]
        #expect(late == [.init(startReader: false, pause: false), .init(startReader: false, pause: false)])
        #expect(inbox.waiting.isEmpty && !inbox.readerRuns && !inbox.readingPaused)
    }
}
