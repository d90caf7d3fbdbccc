import ServiceLifecycle
import SyncProtocol

/// Waits `duration` on `time`'s clock; a cancellation or a graceful shutdown ends the wait early.
func sleepUnlessStopping(_ duration: Duration, on time: SyncClock) async {
    try? await cancelWhenGracefulShutdown { try await time.sleep(for: duration) }
}

/// Waits until `signal` is signalled or `timeout` passes; a cancellation or a graceful
/// shutdown ends the wait early.
func waitUnlessStopping(for signal: WakeSignal, timeout: Duration) async {
    await cancelWhenGracefulShutdown { await signal.wait(timeout: timeout) }
}

/// Whether the task is ending: cancelled, or its service group shutting down.
var isStopping: Bool { Task.isCancelled || Task.isShuttingDownGracefully }
