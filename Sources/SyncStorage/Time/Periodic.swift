import ServiceLifecycle
import SyncProtocol

/// Work done every interval on the injected clock, until its task is cancelled or its service
/// group shuts down gracefully: every "every N seconds" loop of the server is one of these.
///
/// The next run starts `interval` after the previous one ends (a fixed delay, not a fixed
/// rate): a run slowed by an unreachable database is not followed by a burst of runs to catch
/// up, as a timer sequence ticking at fixed instants would do.
///
/// ```swift
/// await Periodic(every: .seconds(5), time: configuration.time, startsAtOnce: true).run {
///     await sweep()
/// }
/// ```
package struct Periodic: Sendable {
    /// The time between the end of one run and the start of the next.
    package let interval: Duration
    package let time: SyncClock
    /// Whether the first run starts at once rather than after one interval.
    package let startsAtOnce: Bool

    package init(every interval: Duration, time: SyncClock, startsAtOnce: Bool = true) {
        self.interval = interval
        self.time = time
        self.startsAtOnce = startsAtOnce
    }

    /// Runs `body` now (or after one interval) and then after every interval, until
    /// cancellation or graceful shutdown; returns then, without waiting out the interval.
    package func run(_ body: () async -> Void) async {
        if !startsAtOnce, !(await pause()) { return }
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            await body()
            guard await pause() else { return }
        }
    }

    /// Waits one interval; `false` when the wait ended early (cancellation or shutdown).
    private func pause() async -> Bool {
        do {
            try await cancelWhenGracefulShutdown { [time, interval] in try await time.sleep(for: interval) }
            return !Task.isShuttingDownGracefully
        } catch {
            return false
        }
    }
}
