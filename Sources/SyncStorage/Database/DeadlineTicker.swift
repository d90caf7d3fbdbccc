import Locking
import SyncProtocol

/// Fires the deadlines of ``withDeadline(_:_:ticker:_:)`` from one task that looks every
/// ``resolution`` while any is pending, and stops when none is. Deadlines are coarse (seconds),
/// so a tenth of a second late is on time; no sleep is ever cancelled (a cancelled one keeps
/// its task's memory until its own deadline). Time is that of the ticker's clock (a test's
/// `MockClock` for a component whose configuration carries one).
package final class DeadlineTicker: Sendable {
    package static let shared = DeadlineTicker(resolution: .milliseconds(100))

    /// A scheduled deadline, to cancel.
    package struct Entry: Sendable, Hashable {
        let id: UInt64
    }

    private struct State {
        var pending: [UInt64: (deadline: Duration, fire: @Sendable () -> Void)] = [:]
        var nextID: UInt64 = 0
        var running = false
    }

    let resolution: Duration
    let time: SyncClock
    /// Deadlines are times on it.
    private let stopwatch: Stopwatch
    private let state = Locked(State())

    package init(resolution: Duration, time: SyncClock = .system) {
        self.resolution = resolution
        self.time = time
        self.stopwatch = Stopwatch(time.clock)
    }

    /// Calls `fire` once `timeout` has passed, unless cancelled first.
    package func schedule(after timeout: Duration, _ fire: @escaping @Sendable () -> Void) -> Entry {
        let deadline = stopwatch.elapsed + timeout
        let (entry, start) = state.withLock { state -> (Entry, Bool) in
            state.nextID += 1
            state.pending[state.nextID] = (deadline, fire)
            defer { state.running = true }
            return (Entry(id: state.nextID), !state.running)
        }
        if start {
            Task.detached { await self.run() }
        }
        return entry
    }

    /// Forgets a deadline that has not fired.
    package func cancel(_ entry: Entry) {
        _ = state.withLock { $0.pending.removeValue(forKey: entry.id) }
    }

    /// The number of pending deadlines, for tests.
    package var pendingCount: Int { state.withLock { $0.pending.count } }

    private func run() async {
        while true {
            // Never cancelled: nobody holds this task.
            try? await time.sleep(for: resolution)
            let now = stopwatch.elapsed
            let (due, stop) = state.withLock { state -> ([@Sendable () -> Void], Bool) in
                var due: [@Sendable () -> Void] = []
                for (id, entry) in state.pending where entry.deadline <= now {
                    due.append(entry.fire)
                    state.pending.removeValue(forKey: id)
                }
                if state.pending.isEmpty { state.running = false }
                return (due, !state.running)
            }
            for fire in due { fire() }
            if stop { return }
        }
    }
}
