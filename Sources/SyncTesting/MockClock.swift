import Foundation
import Locking
import SyncProtocol

/// A clock that moves only when a test advances it: sleepers resume, in deadline order, once
/// ``advance(by:)`` reaches their deadline, so timeouts, leases, intervals and expiry are tested
/// in milliseconds and without racing the machine's load.
///
/// ```swift
/// let clock = MockClock()
/// let service = Watchdog(time: clock.time, interval: .seconds(30))
/// async let run: Void = service.run()
/// await clock.sleepers(atLeast: 1)     // the service is waiting for its next tick
/// clock.advance(by: .seconds(30))      // …which happens now
/// ```
public final class MockClock: Clock, Sendable {
    /// A point in mock time: the duration since the clock was made.
    public struct Instant: InstantProtocol, CustomStringConvertible {
        public var offset: Duration

        public init(offset: Duration) { self.offset = offset }

        public func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        public func duration(to other: Instant) -> Duration { other.offset - offset }
        public static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.offset < rhs.offset }
        public var description: String { "\(offset)" }
    }

    private struct Sleeper {
        let id: UInt64
        let deadline: Instant
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var now = Instant(offset: .zero)
        var nextID: UInt64 = 0
        var sleepers: [Sleeper] = []
        /// Sleepers cancelled before they were registered.
        var cancelled: Set<UInt64> = []
        /// Tests waiting for a number of sleepers.
        var watchers: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
        var sleepsStarted = 0
    }

    private let state = Locked(State())
    /// The wall time at mock time zero.
    public let epoch: Date

    /// A clock at mock time zero, whose wall time starts at `epoch`.
    public init(epoch: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        self.epoch = epoch
    }

    public var now: Instant { state.withLock { $0.now } }
    public var minimumResolution: Duration { .zero }

    /// The wall time now: ``epoch`` plus the time advanced.
    public var date: Date {
        let offset = now.offset.components
        return epoch.addingTimeInterval(Double(offset.seconds) + Double(offset.attoseconds) / 1e18)
    }

    /// This clock and its wall time, for a configuration.
    public var time: SyncClock {
        SyncClock(clock: self, now: { [self] in date })
    }

    /// How many sleeps are waiting for a deadline now.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// How many sleeps were ever started on this clock.
    public var sleepsStarted: Int { state.withLock { $0.sleepsStarted } }

    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let (resume, cancelled, watchers) = state.withLock { state -> (Bool, Bool, [CheckedContinuation<Void, Never>]) in
                    if state.cancelled.remove(id) != nil { return (false, true, []) }
                    state.sleepsStarted += 1
                    if deadline <= state.now { return (true, false, []) }
                    state.sleepers.append(Sleeper(id: id, deadline: deadline, continuation: continuation))
                    return (false, false, Self.satisfiedWatchers(&state))
                }
                for watcher in watchers { watcher.resume() }
                if cancelled {
                    continuation.resume(throwing: CancellationError())
                } else if resume {
                    continuation.resume()
                }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                if let index = state.sleepers.firstIndex(where: { $0.id == id }) {
                    return state.sleepers.remove(at: index)
                }
                state.cancelled.insert(id)
                return nil
            }
            sleeper?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Moves time forward by `duration`, resuming every sleeper whose deadline it reaches, the
    /// earliest first.
    public func advance(by duration: Duration) {
        precondition(duration >= .zero, "mock time moves forward only")
        let due = state.withLock { state -> [Sleeper] in
            state.now = state.now.advanced(by: duration)
            let now = state.now
            let due = state.sleepers.filter { $0.deadline <= now }.sorted { $0.deadline < $1.deadline }
            state.sleepers.removeAll { $0.deadline <= now }
            return due
        }
        for sleeper in due { sleeper.continuation.resume() }
    }

    /// Moves time forward to the earliest sleeper's deadline (if any) and resumes it; returns
    /// whether there was one.
    @discardableResult
    public func advanceToNextDeadline() -> Bool {
        let next = state.withLock { state in state.sleepers.map(\.deadline).min() }
        guard let next else { return false }
        advance(by: now.duration(to: next))
        return true
    }

    /// Returns once at least `count` sleeps are waiting on this clock: the way a test knows a
    /// component has reached its wait before it advances time.
    public func sleepers(atLeast count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state -> Bool in
                if state.sleepers.count >= count { return true }
                state.watchers.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private static func satisfiedWatchers(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        let count = state.sleepers.count
        let ready = state.watchers.filter { $0.count <= count }.map(\.continuation)
        state.watchers.removeAll { $0.count <= count }
        return ready
    }
}
