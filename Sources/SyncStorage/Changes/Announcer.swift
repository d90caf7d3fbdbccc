import Locking
import Logging
import PostgresNIO

/// Sends the announcements of committed writes on ``ObjectStore/notificationChannel``, for
/// the other server instances (this one hears of its own commits directly, through
/// ``ObjectStore/observeCommits(_:)``).
///
/// A writer hands its payloads over right after COMMIT and goes on: it does not wait for a
/// `NOTIFY` of its own. One flush at a time sends everything queued in one statement, so
/// under load many commits share one notification transaction; a newer version of a
/// partition replaces an older one still queued. A process that dies with payloads queued
/// leaves those commits unannounced, as one dying between COMMIT and NOTIFY always could:
/// listeners poll the versions of the partitions they follow, and the trigger sequencer polls
/// for unnumbered events.
final class Announcer: Sendable {
    private struct State {
        /// The newest version of each partition to announce.
        var versions: [String: Int64] = [:]
        /// Other payloads (`events`, `seq:<n>`), in order, each once.
        var signals: [String] = []
        var flushing = false

        var isEmpty: Bool { versions.isEmpty && signals.isEmpty }

        mutating func take() -> [String] {
            var payloads = versions.sorted { $0.key < $1.key }.map { "\($0.value):\($0.key)" }
            payloads.append(contentsOf: signals)
            versions = [:]
            signals = []
            return payloads
        }
    }

    private let client: PostgresClient
    private let logger: Logger
    private let state = Locked(State())

    init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Queues payloads (`"<version>:<partition>"`, `events`, `seq:<n>`) and makes sure a
    /// flush will send them.
    func announce(_ payloads: [String]) {
        guard !payloads.isEmpty else { return }
        let start = state.withLock { state -> Bool in
            for payload in payloads {
                if let colon = payload.firstIndex(of: ":"), let version = Int64(payload[..<colon]) {
                    let partition = String(payload[payload.index(after: colon)...])
                    state.versions[partition] = max(version, state.versions[partition] ?? version)
                } else if !state.signals.contains(payload) {
                    state.signals.append(payload)
                }
            }
            guard !state.flushing else { return false }
            state.flushing = true
            return true
        }
        if start {
            Task { await self.flush() }
        }
    }

    /// Sends what is queued, again and again, until nothing is.
    private func flush() async {
        while true {
            let payloads = state.withLock { state -> [String] in
                if state.isEmpty {
                    state.flushing = false
                    return []
                }
                return state.take()
            }
            guard !payloads.isEmpty else { return }
            do {
                try await client.withOpenConnection { connection in
                    try await Self.send(payloads, on: connection, logger: logger)
                }
            } catch {
                logger.warning("announcing commits failed; listeners will find them by polling", metadata: ["error": "\(error)"])
            }
        }
    }

    /// Sends `payloads` now, in one statement outside any transaction.
    static func send(_ payloads: [String], on connection: PostgresConnection, logger: Logger) async throws {
        let rows = try await connection.query(
            "SELECT pg_notify(\(ObjectStore.notificationChannel), payload) FROM unnest(\(payloads)::text[]) AS t(payload)",
            logger: logger)
        for try await _ in rows {}
    }
}
