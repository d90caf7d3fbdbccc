import Dispatch
import Foundation
import Locking

#if canImport(Glibc)
import Glibc
#endif

/// Ctrl-C or `timeout` (SIGINT, SIGTERM) while a run is under way: what the run started — its
/// `psync serve` process, its embedded PostgreSQL, its folder — is stopped before the tool
/// exits, so no server or database outlives an interrupted benchmark and loads the machine
/// under the next one.
final class Interruption {
    private let sources: [any DispatchSourceSignal]

    /// Runs `cleanUp` (once, on a thread of its own) and exits with 128 + the signal number
    /// when one of the signals arrives, until ``cancel()``.
    init(_ cleanUp: @escaping @Sendable () -> Void) {
        let fired = Locked(false)
        sources = [SIGINT, SIGTERM].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                guard !fired.withLock({ fired in defer { fired = true }; return fired }) else { return }
                progress("interrupted: stopping the server and the database")
                cleanUp()
                exit(128 + number)
            }
            source.resume()
            return source
        }
    }

    /// The run ended on its own: the signals act as usual again.
    func cancel() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
