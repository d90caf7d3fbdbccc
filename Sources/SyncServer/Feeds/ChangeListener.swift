import Logging
import NIOPosix
import PartitionSync
import PostgresNIO
import ServiceLifecycle
import SyncProtocol
import SyncStorage

/// Listens on a dedicated PostgreSQL connection for the notifications every commit sends
/// (`"<version>:<partition>"` on ``ObjectStore/notificationChannel``) and hands them to the
/// hub. A lost connection is re-established with backoff; after each (re)connection the hub
/// reads every feed from its cursor, and the revocations are read again from their table, so
/// notifications missed meanwhile lose nothing. Revocations (`revoked:…`) go to the
/// instance's ``RevocationList``.
package final class ChangeListener: Service, Sendable {
    let url: DatabaseURL
    let hub: SubscriptionHub
    let logger: Logger
    let readiness: Readiness
    /// Receives the notifications that do not name a partition (`events`, `seq:<n>`, and
    /// `instance:<name>` when another instance starts).
    let signal: @Sendable (String) -> Void
    let revocations: RevocationList
    let revocationLedger: RevocationLedger

    init(
        url: DatabaseURL, hub: SubscriptionHub, readiness: Readiness, revocations: RevocationList, revocationLedger: RevocationLedger,
        logger: Logger, signal: @escaping @Sendable (String) -> Void
    ) {
        self.url = url
        self.hub = hub
        self.readiness = readiness
        self.revocations = revocations
        self.revocationLedger = revocationLedger
        self.logger = logger
        self.signal = signal
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
                try? await cancelWhenGracefulShutdown { try await Task.sleep(for: backoff) }
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
                signal("events")
                signal("seq:0")
                for try await notification in notifications {
                    handle(notification.payload)
                }
            }
        } onCancelOrGracefulShutdown: {
            Task { try? await connection.close() }
        }
    }

    private func handle(_ payload: String) {
        if payload == "events" || payload.hasPrefix("seq:") || payload.hasPrefix(InstanceRegistry.arrivalPrefix) {
            signal(payload)
            return
        }
        if let parsed = Revocation.parse(payload: payload) {
            revocations.add([parsed.revocation], expires: parsed.expires)
            return
        }
        guard let colon = payload.firstIndex(of: ":"), let version = Int64(payload[..<colon]),
            let partition = try? Partition(String(payload[payload.index(after: colon)...]))
        else {
            logger.warning("ignoring a malformed change notification", metadata: ["payload": "\(payload.prefix(100))"])
            return
        }
        hub.committed(partition, version: version)
    }
}
