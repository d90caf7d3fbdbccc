import Logging
import NIOPosix
import PartitionSync
import PostgresNIO
import ServiceLifecycle
import SyncProtocol
import SyncStorage

/// Listens on a dedicated PostgreSQL connection for the notifications on
/// ``ObjectStore/notificationChannel``, parses each once (``ChangeNotification``) and hands it
/// to whom it concerns: commits to the hub, revocations to the instance's ``RevocationList``,
/// the rest (events recorded or numbered, an instance arriving) to ``notified``. A lost
/// connection is re-established with backoff; after each (re)connection the hub reads every
/// feed from its cursor, and the revocations are read again from their table, so
/// notifications missed meanwhile lose nothing.
package final class ChangeListener: Service, Sendable {
    let url: DatabaseURL
    let hub: SubscriptionHub
    let logger: Logger
    let readiness: Readiness
    /// Receives the notifications that are neither commits nor revocations: events recorded
    /// or numbered (for the triggers), an instance arriving.
    let notified: @Sendable (ChangeNotification) -> Void
    let revocations: RevocationList
    let revocationLedger: RevocationLedger
    /// Time for the backoff between attempts to listen again.
    let time: SyncClock

    init(
        url: DatabaseURL, hub: SubscriptionHub, readiness: Readiness, revocations: RevocationList, revocationLedger: RevocationLedger,
        time: SyncClock, logger: Logger, notified: @escaping @Sendable (ChangeNotification) -> Void
    ) {
        self.url = url
        self.time = time
        self.hub = hub
        self.readiness = readiness
        self.revocations = revocations
        self.revocationLedger = revocationLedger
        self.logger = logger
        self.notified = notified
    }

    package func run() async throws {
        var attempt = 0
        await withTaskCancellationOrGracefulShutdownHandler {
            while !Task.isCancelled && !Task.isShuttingDownGracefully {
                do {
                    try await listenOnce()
                } catch {
                    if Task.isCancelled || Task.isShuttingDownGracefully { break }
                    logger.warning("change listener lost its connection", metadata: ["error": "\(String(reflecting: error).prefix(300))"])
                }
                readiness.listening(false)
                attempt += 1
                // The backoff ends early on shutdown.
                let backoff = Duration.milliseconds(min(50 * (1 << min(attempt, 6)), 2_000))
                try? await cancelWhenGracefulShutdown { [time] in try await time.sleep(for: backoff) }
            }
        } onCancelOrGracefulShutdown: {}
    }

    private func listenOnce() async throws {
        var configuration = try url.connectionConfiguration()
        configuration.options.additionalStartupParameters.append(("application_name", "psync listener"))
        let connection = try await PostgresConnection.connect(
            on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration, id: 0, logger: logger)
        defer { Task { try? await connection.close() } }
        try await withTaskCancellationOrGracefulShutdownHandler {
            try await connection.listen(on: ObjectStore.notificationChannel) { notifications in
                // LISTEN is active from here on: commits before this point are caught by the
                // resync below, commits after it arrive as notifications. The same holds for
                // revocations, read whole before the instance counts as ready.
                revocations.replace(with: try await revocationLedger.live())
                readiness.listening(true)
                hub.listenerConnected()
                // Commits while the listener was away were not heard: the sequencer looks
                // now (the trigger runners look at their next poll).
                notified(.eventsRecorded)
                for try await notification in notifications {
                    handle(notification.payload)
                }
            }
        } onCancelOrGracefulShutdown: {
            Task { try? await connection.close() }
        }
    }

    private func handle(_ payload: String) {
        guard let notification = ChangeNotification(payload: payload) else {
            logger.warning("ignoring a malformed change notification", metadata: ["payload": "\(payload.prefix(100))"])
            return
        }
        switch notification {
        case .committed(let partition, let version):
            hub.committed(partition, version: version)
        case .revoked(let revocation, let expires):
            revocations.add([revocation], expires: expires)
        case .eventsRecorded, .sequenced, .instanceArrived:
            notified(notification)
        }
    }
}
