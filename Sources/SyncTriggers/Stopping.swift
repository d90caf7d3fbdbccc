import ServiceLifecycle
import SyncProtocol

/// Waits `duration` on `time`'s clock; a cancellation or a graceful shutdown ends the wait early.
func sleepUnlessStopping(_ duration: Duration, on time: SyncClock) async {
    try? await cancelWhenGracefulShutdown { try await time.sleep(for: duration) }
}

/// Waits until `signal` is signalled or `timeout` passes; a cancellation or a graceful
/// shutdown ends the wait early.
func waitUnlessStopping(for signal: WakeSignal, timeout: Duration) async {
    // The shutdown signals the wait (no task per wait, unlike `cancelWhenGracefulShutdown`:
    // the sequencer and every runner wait once per pass).
    await withGracefulShutdownHandler {
        await signal.wait(timeout: timeout)
    } onGracefulShutdown: {
        signal.signal()
    }
}

/// Whether the task is ending: cancelled, or its service group shutting down.
var isStopping: Bool { Task.isCancelled || Task.isShuttingDownGracefully }
