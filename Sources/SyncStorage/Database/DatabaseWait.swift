import Logging

/// The decisions of a command or server waiting for its database, without the connecting:
/// after each try, whether to try again, what to tell the operator, and when to give up.
/// ``DatabaseReachability`` makes the tries and does what this says.
///
/// A server (``Patience/forever``) waits as long as it takes: one warning at the first failed
/// try, a reminder every ``reminder`` while it lasts, a notice when the database answers; a
/// refusal (a wrong password, a database that does not exist) is an error line, and still
/// waited out, since a database being set up (a Patroni cluster bootstrapping, its roles made
/// by a script) refuses until it is ready. A one-shot command (``Patience/upTo(_:)``) gives
/// up at its deadline with the last reason, and at once on a refusal, which no retry within
/// its patience is likely to mend; it waits out one that passes (starting up, shutting down,
/// in recovery, out of connection slots). Each try alone is not logged.
package struct DatabaseWait: Sendable {
    package enum Patience: Sendable, Equatable {
        /// Until the database answers (a server).
        case forever
        /// At most this long, then give up (a one-shot command; zero for one try).
        case upTo(Duration)
    }

    /// How a try ended, as the driver classified it.
    package enum Failure: Sendable, Equatable {
        /// Nothing answered, or the database said it cannot take connections yet: worth trying again.
        case passing(String)
        /// The database refused the connection for a reason that stays (the server's message).
        case refused(String)
    }

    /// A line for the operator.
    package struct Line: Sendable, Equatable {
        package var level: Logger.Level
        package var message: String

        package init(_ level: Logger.Level, _ message: String) {
            self.level = level
            self.message = message
        }
    }

    package enum Action: Sendable, Equatable {
        /// Log the line (when there is one), pause, and try again.
        case retry(after: Duration, log: Line?)
        /// Stop waiting: the reason, for the command's one line of error.
        case giveUp(String)
    }

    package let target: String
    package let patience: Patience
    /// The pause between two tries.
    package let pause: Duration
    /// How often a long wait is told again.
    package let reminder: Duration
    /// When the last line was logged, from the start of the wait; `nil` before the first failure.
    private var toldAt: Duration?

    /// `target` names the database in every line: `127.0.0.1:5432`.
    package init(target: String, patience: Patience, pause: Duration = .milliseconds(500), reminder: Duration = .seconds(30)) {
        self.target = target
        self.patience = patience
        self.pause = pause
        self.reminder = reminder
    }

    /// A try failed `elapsed` after the wait began.
    package mutating func failed(_ failure: Failure, after elapsed: Duration) -> Action {
        let reason: String
        let level: Logger.Level
        switch failure {
        case .refused(let message):
            guard patience == .forever else { return .giveUp("the database at \(target) refused the connection: \(message)") }
            (reason, level) = ("it refuses the connection: \(message)", .error)
        case .passing(let text):
            (reason, level) = (text, .warning)
        }
        if case .upTo(let patience) = patience {
            guard elapsed < patience else {
                return .giveUp("cannot connect to the database at \(target) (tried for \(Self.seconds(patience)) s, --db-connect-timeout): \(reason)")
            }
        }
        guard let toldAt else {
            self.toldAt = elapsed
            return .retry(after: pauseBefore(elapsed), log: Line(level, "waiting for the database at \(target): \(reason); trying again every \(Self.seconds(pause)) s"))
        }
        guard elapsed - toldAt >= reminder else { return .retry(after: pauseBefore(elapsed), log: nil) }
        self.toldAt = elapsed
        return .retry(after: pauseBefore(elapsed), log: Line(level, "still waiting for the database at \(target) after \(Self.seconds(elapsed)) s: \(reason)"))
    }

    /// A try connected `elapsed` after the wait began: the line to log, when it had to wait.
    package func connected(after elapsed: Duration) -> String? {
        toldAt == nil ? nil : "the database at \(target) answered after \(Self.seconds(elapsed)) s"
    }

    /// The pause before the next try: never past a one-shot command's deadline.
    private func pauseBefore(_ elapsed: Duration) -> Duration {
        guard case .upTo(let patience) = patience else { return pause }
        return min(pause, patience - elapsed)
    }

    /// Whole seconds, or tenths below ten.
    static func seconds(_ duration: Duration) -> String {
        let (whole, attoseconds) = duration.components
        if whole >= 10 || attoseconds == 0 { return "\(whole)" }
        let tenths = Int(attoseconds / 100_000_000_000_000_000)
        return "\(whole).\(tenths)"
    }
}
