import Locking
import PartitionSync
import SyncProtocol

/// Wakes one waiting task, or the next one to wait; a wait gives up after a timeout. (An
/// AsyncStream cannot serve: cancelling a timed-out read of it ends the stream.)
final class WakeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: (id: Int, continuation: CheckedContinuation<Void, Never>)?
        /// The timeout of the current wait, cancelled when a signal ends the wait first.
        var timer: Task<Void, Never>?
        var nextID = 0
    }

    private let state = Locked(State())
    /// The clock timeouts are measured on.
    private let time: SyncClock

    init(time: SyncClock) {
        self.time = time
    }

    func signal() {
        let (waiter, timer) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Task<Void, Never>?) in
            guard let waiter = state.waiter else {
                state.pending = true
                return (nil, nil)
            }
            state.waiter = nil
            defer { state.timer = nil }
            return (waiter.continuation, state.timer)
        }
        timer?.cancel()
        waiter?.resume()
    }

    /// Returns when signalled (also if signalled since the last wait), after `timeout`, or
    /// when the task is cancelled.
    func wait(timeout: Duration) async {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    if state.pending {
                        state.pending = false
                        return true
                    }
                    state.waiter = (id, continuation)
                    return false
                }
                if ready {
                    continuation.resume()
                    return
                }
                let timer = Task { [weak self, time] in
                    guard (try? await time.sleep(for: timeout)) != nil else { return }
                    self?.expire(id)
                }
                state.withLock { state in
                    // Still waiting (a signal may have come in between): keep the timer to
                    // cancel; otherwise it is not needed.
                    if state.waiter?.id == id { state.timer = timer } else { timer.cancel() }
                }
            }
        } onCancel: {
            expire(id)
        }
    }

    private func expire(_ id: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter, waiter.id == id else { return nil }
            state.waiter = nil
            state.timer = nil
            return waiter.continuation
        }
        waiter?.resume()
    }
}
