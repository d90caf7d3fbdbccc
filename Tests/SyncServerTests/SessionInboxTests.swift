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
        var inbox = SessionInbox<Int>()
        let first = inbox.arrived(message("a"), sessionOpen: true, startReader: { 1 })
        #expect(first == .init(startedReader: true, pause: false))
        #expect(inbox.reader == 1)
        #expect(inbox.readerRuns && !inbox.readingPaused)
        _ = inbox.takeNext(sessionOpen: true)
        let second = inbox.arrived(message("b"), sessionOpen: true, startReader: { 1 })
        #expect(!second.startedReader, "a second reader started while one runs")
    }

    @Test("while two messages wait the connection pauses")
    func secondWaitingPauses() {
        var inbox = SessionInbox<Int>()
        _ = inbox.arrived(message("a"), sessionOpen: true, startReader: { 1 })
        let second = inbox.arrived(message("b"), sessionOpen: true, startReader: { 1 })
        #expect(second == .init(startedReader: false, pause: true))
        #expect(inbox.readingPaused)
        #expect(SessionInbox<Int>.pauseThreshold == 2)
    }

    @Test("the reader takes messages in order, and reading resumes once fewer than two wait")
    func takingResumes() {
        var inbox = SessionInbox<Int>()
        for name in ["a", "b", "c"] { _ = inbox.arrived(message(name), sessionOpen: true, startReader: { 1 }) }
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
        var inbox = SessionInbox<Int>()
        _ = inbox.arrived(.joinPresence, sessionOpen: true, startReader: { 1 })
        let first = inbox.takeNext(sessionOpen: true)
        #expect(text(first.message) == "presence" && !first.readerEnds)
        let last = inbox.takeNext(sessionOpen: true)
        #expect(last.message == nil && last.readerEnds)
        #expect(!inbox.readerRuns)
        #expect(inbox.arrived(message("a"), sessionOpen: true, startReader: { 2 }).startedReader, "no reader started after the last one ended")
        #expect(inbox.reader == 2)
    }

    @Test("closing drops the waiting messages; the reader then ends and reading resumes")
    func closingDropsAndResumes() {
        var inbox = SessionInbox<Int>()
        for name in ["a", "b", "c"] { _ = inbox.arrived(message(name), sessionOpen: true, startReader: { 1 }) }
        inbox.dropWaiting()
        #expect(inbox.waiting.isEmpty)
        let next = inbox.takeNext(sessionOpen: false)
        #expect(next.message == nil && next.readerEnds)
        #expect(next.resumeReading && !inbox.readingPaused)
        #expect(!inbox.readerRuns)
    }

    @Test("a session no longer open hands the reader nothing, even with messages waiting")
    func notOpenEndsTheReader() {
        var inbox = SessionInbox<Int>()
        for name in ["a", "b"] { _ = inbox.arrived(message(name), sessionOpen: true, startReader: { 1 }) }
        let next = inbox.takeNext(sessionOpen: false)  // shutting down: not dropped before
        #expect(next.message == nil && next.readerEnds && next.resumeReading)
        #expect(inbox.waiting.isEmpty && !inbox.readerRuns)
    }

    @Test("arrivals after the close are ignored: queued for nobody, no reader, no pause")
    func arrivalsAfterCloseIgnored() {
        var inbox = SessionInbox<Int>()
        _ = inbox.arrived(message("a"), sessionOpen: true, startReader: { 1 })
        inbox.dropWaiting()
        _ = inbox.takeNext(sessionOpen: false)
        let late = [inbox.arrived(message("b"), sessionOpen: false, startReader: { 1 }), inbox.arrived(message("c"), sessionOpen: false, startReader: { 1 })]
        #expect(late == [.init(startedReader: false, pause: false), .init(startedReader: false, pause: false)])
        #expect(inbox.waiting.isEmpty && !inbox.readerRuns && !inbox.readingPaused)
    }
}
