import ServiceLifecycle
import SyncProtocol

/// Runs `body` at once and then every `interval` on `time`'s clock, until the task is
/// cancelled or its service group shuts down gracefully (which also ends a wait). The one
/// "every N seconds" loop of the trigger services.
func repeatEvery(_ interval: Duration, on time: SyncClock, _ body: () async -> Void) async {
    while !Task.isCancelled, !Task.isShuttingDownGracefully {
        await body()
        await sleepUnlessStopping(interval, on: time)
    }
}

/// Waits `duration` on `time`'s clock; a cancellation or a graceful shutdown ends the wait early.
func sleepUnlessStopping(_ duration: Duration, on time: SyncClock) async {
    try? await cancelWhenGracefulShutdown { try await time.sleep(for: duration) }
}

/// Whether the task is ending: cancelled, or its service group shutting down.
var isStopping: Bool { Task.isCancelled || Task.isShuttingDownGracefully }
