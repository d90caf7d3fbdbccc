@testable import SyncServer
import Testing

/// The session's life as a value: which task acts, for each happening, with no socket, lock or
/// database (the end-to-end tests of sessions run the same rules through real servers).
@Suite("Session lifecycle")
struct SessionLifecycleTests {
    @Test("one worker at a time; work asked for during a pass makes it pass again instead of being lost")
    func oneWorkerNoLostRequest() {
        var life = SessionLifecycle()
        var answers = [life.workRequested()]
        life.workerLooks()
        answers.append(life.workRequested())  // during the pass
        answers.append(life.workerPassed(uploadsWaiting: false))  // must pass again
        life.workerLooks()
        answers.append(life.workerPassed(uploadsWaiting: false))  // now it ends
        answers.append(life.workRequested())  // a new worker
        #expect(answers == [true, false, false, true, true])
    }

    @Test("a worker passes again while uploads wait, unless the session is shutting down")
    func uploadsKeepTheWorker() {
        var life = SessionLifecycle()
        _ = life.workRequested()
        life.workerLooks()
        let whileOpen = life.workerPassed(uploadsWaiting: true)
        _ = life.shutdownBegan()
        let whileShuttingDown = life.workerPassed(uploadsWaiting: true)
        #expect(!whileOpen && whileShuttingDown)
        #expect(!life.isWorking)
    }

    @Test("the main task is woken once until it looks")
    func oneWakeUp() {
        var life = SessionLifecycle()
        var answers = [life.itemsQueued(), life.itemsQueued()]
        life.writerLooks()
        answers.append(life.itemsQueued())
        #expect(answers == [true, false, true])
    }

    @Test("a shutdown closes at once when no upload is applied, and after the batch's answer when one is")
    func shutdown() {
        var idle = SessionLifecycle()
        let idleCloses = idle.shutdownBegan()
        #expect(idleCloses && !idle.acceptsUploadBatch)

        var busy = SessionLifecycle()
        #expect(busy.acceptsUploadBatch)
        busy.uploadBatchBegan()
        let closesAtOnce = busy.shutdownBegan()
        let closesAfterAnswer = busy.uploadBatchAnswered()
        #expect(!closesAtOnce, "closed before the upload being applied was answered")
        #expect(closesAfterAnswer && !busy.acceptsUploadBatch)

        var open = SessionLifecycle()
        open.uploadBatchBegan()
        let closesWithoutShutdown = open.uploadBatchAnswered()
        #expect(!closesWithoutShutdown && open.isOpen)
    }

    @Test("a session closes once; then no worker starts and no upload batch begins")
    func closesOnce() {
        var life = SessionLifecycle()
        let answers = [life.closed(), life.closed(), life.workRequested()]
        #expect(answers == [true, false, false], "a second close frame, or a worker after the close")
        #expect(!life.acceptsUploadBatch && !life.isOpen)
    }

    @Test("a revoked credential is answered once, however many find it revoked, and not after the close")
    func revokedOnce() {
        var life = SessionLifecycle()
        let answers = [life.revoked(), life.revoked(), life.closed(), life.revoked()]
        #expect(answers == [true, false, true, false], "session_revoked sent twice, or the close lost")
        var closing = SessionLifecycle()
        let closedFirst = [closing.closed(), closing.revoked()]
        #expect(closedFirst == [true, false], "session_revoked sent to a session already closing")
    }
}
