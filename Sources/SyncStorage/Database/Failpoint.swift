import Foundation
import Locking

/// Faults a test can inject into a real `psync` process, named in the environment variable
/// `PSYNC_FAILPOINT` as `<point>` or `<point>:<argument>` (docs/ARCHITECTURE.md,
/// "Failpoints"). Compiled into debug builds only: in a release build every call does nothing.
///
/// - `after-commit-before-ack[:<requestId>]` stops every upload (or the one with that request
///   id) right after its commit, before its answer is sent. The process stays up, holding the
///   answer forever, until the test kills it.
/// - `trigger-before-commit[:<trigger>]`: the first handling transaction of that trigger (or of
///   any) in this process, its handler done and its progress not yet recorded, prints
///   `failpoint trigger-before-commit reached` on standard error and waits a second, so that a
///   test can freeze the process (SIGSTOP) there, in the middle of the transaction.
/// - `trigger-part-committed[:<trigger>]`: the first part a handler of that trigger (or of any)
///   commits in this process (`applyInParts`) prints `failpoint trigger-part-committed
///   reached` on standard error once committed, and the handler then stops there for good,
///   until the test kills the process.
/// - `trigger-fails:<trigger>`: the handler of that trigger fails, every time it is run by the
///   trigger runner, for the first event it is given in this process: the event ends as a dead
///   letter. A retry through the admin endpoint runs the handler without it, and succeeds.
package enum Failpoint: String, Sendable {
    case afterCommitBeforeAck = "after-commit-before-ack"
    case triggerBeforeCommit = "trigger-before-commit"
    case triggerFails = "trigger-fails"
    case triggerPartCommitted = "trigger-part-committed"

    #if DEBUG
    private static let armed: (point: Failpoint, argument: String?)? = {
        guard let setting = ProcessInfo.processInfo.environment["PSYNC_FAILPOINT"], !setting.isEmpty else { return nil }
        let parts = setting.split(separator: ":", maxSplits: 1).map(String.init)
        guard let point = Failpoint(rawValue: parts[0]) else { return nil }
        return (point, parts.count > 1 ? parts[1] : nil)
    }()

    private static let paused = Locked(false)
    /// The event that `trigger-fails` fails, once chosen.
    private static let failing = Locked<Int64?>(nil)

    private static func isArmed(_ point: Failpoint, for argument: String) -> Bool {
        guard let armed, armed.point == point else { return false }
        return armed.argument.map { $0 == argument } ?? true
    }
    #endif

    /// Stops here for good when this failpoint is armed for `argument` (until the test kills
    /// the process, or the task is cancelled: a cancelled sleep returns at once, and would
    /// otherwise spin).
    package static func stop(at point: Failpoint, for argument: String) async {
        #if DEBUG
        guard isArmed(point, for: argument) else { return }
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        #endif
    }

    /// Says it reached here on standard error, and stops here for good, when this failpoint
    /// is armed for `argument`.
    package static func announceAndStop(at point: Failpoint, for argument: String) async {
        #if DEBUG
        guard isArmed(point, for: argument) else { return }
        FileHandle.standardError.write(Data("failpoint \(point.rawValue) reached\n".utf8))
        await stop(at: point, for: argument)
        #endif
    }

    /// Throws when `trigger-fails` is armed for `argument` and `position` is the event it fails.
    package static func fail(at point: Failpoint, for argument: String, position: Int64) throws {
        #if DEBUG
        guard isArmed(point, for: argument) else { return }
        let chosen = failing.withLock { failing -> Int64 in
            if failing == nil { failing = position }
            return failing!
        }
        if chosen == position { throw FailpointError(description: "failpoint \(point.rawValue) for event \(position)") }
        #endif
    }

    /// The first time this process gets here with the failpoint armed for `argument`: says so
    /// on standard error and waits a second.
    package static func pauseOnce(at point: Failpoint, for argument: String) async {
        #if DEBUG
        guard isArmed(point, for: argument), paused.withLock({ (done: inout Bool) -> Bool in
            defer { done = true }
            return !done
        }) else { return }
        FileHandle.standardError.write(Data("failpoint \(point.rawValue) reached\n".utf8))
        try? await Task.sleep(for: .seconds(1))
        #endif
    }
}

/// The error a failpoint throws.
package struct FailpointError: Error, CustomStringConvertible {
    package var description: String
}
