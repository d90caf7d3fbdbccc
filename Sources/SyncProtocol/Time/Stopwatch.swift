/// The time elapsed on a clock since the stopwatch was made, as a plain `Duration`: policy
/// that compares times (leases, gathering, the watchdog) holds durations, whatever the
/// clock's instant type, so the clock can be `any Clock<Duration>` (``SyncClock/clock``).
package struct Stopwatch: Sendable {
    private let read: @Sendable () -> Duration

    /// Starts now on `clock`.
    package init(_ clock: any Clock<Duration>) {
        read = Self.reader(clock)
    }

    private static func reader<C: Clock<Duration>>(_ clock: C) -> @Sendable () -> Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }

    /// The time since the start.
    package var elapsed: Duration { read() }
}
