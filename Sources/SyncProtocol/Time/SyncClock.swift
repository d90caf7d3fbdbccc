import Foundation

/// The engine's time: a clock to wait on (timeouts, intervals, leases, backoff) and the wall
/// time it stores and compares with stored times (expiry, token lifetimes, `@expiresAt`).
///
/// Every component that waits or reads the time takes one from its configuration, so a test
/// drives time with a `MockClock` (the test kit's) instead of waiting it out.
///
/// ```swift
/// let time = SyncClock.system
/// try await time.sleep(for: .seconds(5))
/// let expires = time.now().addingTimeInterval(900)
/// ```
public struct SyncClock: Sendable {
    /// What waits: `ContinuousClock` in production.
    public let clock: any Clock<Duration>
    /// The wall time, for what is stored or compared with stored times: `Date()` in production.
    public let now: @Sendable () -> Date
    /// Monotonic time: the duration since this value was made, read from ``clock``. What a
    /// component keeps to measure an interval (a session's last activity), without the
    /// clock's own instant type.
    public let uptime: @Sendable () -> Duration

    public init<C: Clock<Duration>>(clock: C, now: @escaping @Sendable () -> Date) {
        self.clock = clock
        self.now = now
        let stopwatch = Stopwatch(clock)
        self.uptime = { stopwatch.elapsed }
    }

    /// The system's continuous clock and wall time.
    public static let system = SyncClock(clock: ContinuousClock(), now: { Date() })

    /// Suspends for `duration` on ``clock``; throws `CancellationError` when the task is cancelled.
    public func sleep(for duration: Duration) async throws {
        try await clock.sleep(for: duration, tolerance: nil)
    }

    /// The time elapsed on ``clock`` while `body` ran.
    public func measure(_ body: () async throws -> Void) async rethrows -> Duration {
        try await clock.measure(body)
    }
}
