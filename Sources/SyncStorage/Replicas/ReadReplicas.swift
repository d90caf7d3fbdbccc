import Locking
import Logging
import Metrics
import PostgresNIO
import ServiceLifecycle
import SyncProtocol

/// The streaming replicas snapshot and catch-up pages are read from (docs/SCALING.md, "Reads
/// from replicas"): their connection pools, the monitor that looks at them and at the primary
/// every ``ReplicaConfiguration/pollInterval``, and the choice of replica for a page, by the
/// policy of ``ReplicaStateMachine``.
///
/// A page is asked of a replica with the primary's WAL position it must include (read on the
/// primary when the catch-up starts: ``target()``); the replica's own check (migration 0015)
/// refuses it when its replay is not there yet, and the page is read from the primary
/// instead. Live pushes come from the primary's commits, as without replicas.
package final class ReadReplicas: Service, Sendable {
    struct Replica: Sendable {
        let name: String
        let client: PostgresClient
        let pages: Counter
        let inUse: Gauge
    }

    let replicas: [Replica]
    let primary: PostgresClient
    let configuration: ReplicaConfiguration
    let time: SyncClock
    let logger: Logger
    private let state: Locked<ReplicaStateMachine>
    private let fallbacks: [String: Counter]

    package init(
        configuration: ReplicaConfiguration, primary: PostgresClient, applicationName: String, time: SyncClock,
        metricsFactory: any MetricsFactory, logger: Logger
    ) {
        self.configuration = configuration
        self.primary = primary
        self.time = time
        self.logger = logger
        replicas = configuration.urls.map { url in
            let client = Self.clientConfiguration(url, configuration, applicationName: applicationName)
            let name = "\(url.host):\(url.port)"
            return Replica(
                name: name, client: PostgresClient(configuration: client, backgroundLogger: logger),
                pages: Counter(label: "psync_replica_pages_total", dimensions: [("replica", name)], factory: metricsFactory),
                inUse: Gauge(label: "psync_replica_in_use", dimensions: [("replica", name)], factory: metricsFactory))
        }
        fallbacks = Dictionary(
            uniqueKeysWithValues: ["behind", "failed", "none"].map {
                ($0, Counter(label: "psync_replica_fallbacks_total", dimensions: [("reason", $0)], factory: metricsFactory))
            })
        state = Locked(ReplicaStateMachine(replicas: configuration.urls.count, maximumLagBytes: configuration.maximumLagBytes))
    }

    /// The pool of connections to the replica at `url`: its size, keep-alive and idle timeout
    /// from `configuration`, its connections named `applicationName` in `pg_stat_activity`.
    package static func clientConfiguration(
        _ url: DatabaseURL, _ configuration: ReplicaConfiguration, applicationName: String
    ) -> PostgresClient.Configuration {
        var client = url.clientConfiguration
        client.options.maximumConnections = configuration.poolSize
        client.options.keepAliveBehavior = configuration.keepAlive.map { .init(frequency: $0) }
        client.options.connectionIdleTimeout = configuration.idleTimeout
        client.options.additionalStartupParameters.append(("application_name", applicationName))
        return client
    }

    /// ``ReplicaConfiguration/wait`` in whole milliseconds, as the replica's page function takes it.
    private var waitMilliseconds: Int32 {
        let (seconds, attoseconds) = configuration.wait.components
        return Int32(clamping: seconds * 1_000 + attoseconds / 1_000_000_000_000_000)
    }

    /// The replicas' names (`host:port`) and standings, for operators.
    package var standings: [(name: String, standing: ReplicaStateMachine.Standing)] {
        let standings = state.withLock { $0.standings }
        return zip(replicas, standings).map { ($0.name, $1) }
    }

    /// Runs the replicas' connection pools and the monitor, until cancelled.
    package func run() async {
        await withDiscardingTaskGroup { group in
            for replica in replicas {
                group.addTask { await replica.client.run() }
            }
            group.addTask {
                await Periodic(every: self.configuration.pollInterval, time: self.time).run { await self.look() }
            }
        }
    }

    // MARK: Routing a page

    /// The primary's WAL position and timeline now, which a page read from a replica must
    /// include: `nil` when no replica is in use (nothing is asked of the primary then) or the
    /// primary is not one (a standby during a failover).
    package func target() async throws -> ReadTarget? {
        guard state.withLock({ $0.standings.contains(where: \.inUse) }) else { return nil }
        let (timeline, position) = try await Self.observePrimary(primary, logger: logger)
        return position.map { ReadTarget(position: $0, timeline: timeline) }
    }

    /// Reads with a replica that has replayed `target` on its timeline, if one is in use:
    /// `read` gets a connection to the replica once the replica was seen past the target (the
    /// last look, an earlier page) or has said so on that connection (`psync_replica_ready`,
    /// migration 0015, waiting up to ``ReplicaConfiguration/wait``). `read`'s statements come
    /// after that, so their snapshot holds every commit replayed by then: replay only moves
    /// forward while the replica runs, and a restart ends every connection to it.
    ///
    /// Bounded by ``ReplicaConfiguration/readTimeout`` twice over, for a replica that stopped
    /// or froze since it was last seen: the connection must come within it (a lease given up,
    /// ``HeldConnection``), and the read must not go that long without an answer or a row
    /// (the connection is closed, ``ReplicaReadWatch``). `read` marks each row it hands over
    /// to its caller with ``ReplicaReadWatch/took()``.
    ///
    /// `nil` when no replica is in use, or the one asked was behind, failed or did not answer
    /// in time before `read` handed a row over: the caller reads from the primary. A failure
    /// after that is thrown, and the caller reads again.
    func read<Result>(_ target: ReadTarget, _ read: (PostgresConnection, ReplicaReadWatch) async throws -> Result) async throws -> Result? {
        guard let replica = choose(target: target) else { return nil }
        let held = HeldConnection(replica.client)
        defer { held.release() }
        var watch: ReplicaReadWatch?
        defer { watch?.stop() }
        do {
            let connection = try await withDeadline(configuration.readTimeout, "replica \(replica.name) to lend a connection") {
                try await held.take()
            }
            let watching = ReplicaReadWatch(connection, patience: configuration.readTimeout)
            watch = watching
            if !replica.known {
                let answer = try await connection.query(
                    "SELECT psync_replica_ready(\(target.position), \(target.timeline), \(waitMilliseconds))", logger: logger)
                for try await _ in answer {}
                watching.answered()
                ready(replica.index, target: target)
            }
            let result = try await read(connection, watching)
            served(replica.index)
            return result
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "PSR01" {
            behind(replica.index)
        } catch let error as PSQLError where error.serverInfo?[.sqlState] == "40001" && watch?.handed != true {
            // Cancelled by a conflict with the replica's recovery (hot standby): the replica
            // stays in use.
            behind(replica.index)
        } catch {
            // Another timeline or not streaming (PSR02), unreachable, too slow: out for the
            // next looks, then until the monitor finds it right again.
            if Task.isCancelled { throw error }
            readFailed(replica.index, error)
            if watch?.handed == true { throw error }
        }
        return nil
    }

    /// The replica to ask for a page that needs `target`, if any.
    /// `known`: the replica's replay was seen past the target on its timeline already (a look
    /// or an earlier check), so the page is read without asking it again.
    private func choose(target: ReadTarget) -> (index: Int, name: String, client: PostgresClient, known: Bool)? {
        guard let (index, known) = state.withLock({ $0.choose(target: target.position, timeline: target.timeline) }) else {
            fallbacks["none"]?.increment()
            return nil
        }
        return (index, replicas[index].name, replicas[index].client, known)
    }

    /// A replica said it had replayed `target` (``read(_:_:)`` asked it).
    private func ready(_ index: Int, target: ReadTarget) {
        state.withLock { $0.ready(index, target: target.position) }
    }

    /// A replica served a page.
    private func served(_ index: Int) {
        state.withLock { $0.served(index) }
        replicas[index].pages.increment()
    }

    /// A replica had not replayed far enough for a page, or a conflict with its recovery
    /// cancelled the read: the page is read from the primary.
    private func behind(_ index: Int) {
        fallbacks["behind"]?.increment()
    }

    /// A page read from a replica failed: it is read from the primary, and the replica serves
    /// none for the next looks (more of them after each failure in a row), then until the
    /// monitor finds it right again.
    private func readFailed(_ index: Int, _ error: any Error) {
        fallbacks["failed"]?.increment()
        settle(state.withLock { $0.readFailed(index, Self.describe(error)) }.map { [$0] } ?? [])
    }

    // MARK: The monitor

    private func look() async {
        let (primary, logger, timeout) = (self.primary, self.logger, configuration.lookTimeout)
        do {
            let (timeline, position) = try await withDeadline(timeout, "a look at the primary") {
                try await Self.observePrimary(primary, logger: logger)
            }
            // A standby answering as the primary (during a failover) says nothing of the replicas.
            if let position { settle(state.withLock { $0.primaryObserved(timeline: timeline, position: position) }) }
        } catch {
            logger.debug("a look at the primary failed", metadata: ["error": "\(Self.describe(error))"])
        }
        await withDiscardingTaskGroup { group in
            for (index, replica) in replicas.enumerated() {
                group.addTask {
                    let change: ReplicaStateMachine.Change?
                    do {
                        let observation = try await withDeadline(timeout, "a look at replica \(replica.name)") {
                            try await Self.observeReplica(replica.client, logger: logger)
                        }
                        change = self.state.withLock { $0.observed(index, observation) }
                    } catch {
                        change = self.state.withLock { $0.failed(index, Self.describe(error)) }
                    }
                    self.settle(change.map { [$0] } ?? [])
                }
            }
        }
    }

    /// Logs what went in or out of use and sets the gauges.
    private func settle(_ changes: [ReplicaStateMachine.Change]) {
        for change in changes {
            let replica = replicas[change.replica]
            switch change.standing {
            case .inUse:
                replica.inUse.record(1)
                logger.notice("replica in use for snapshots and catch-ups", metadata: ["replica": "\(replica.name)"])
            case .out(let reason):
                replica.inUse.record(0)
                if reason == .unobserved { continue }
                logger.warning("replica out of reads", metadata: ["replica": "\(replica.name)", "reason": "\(reason)"])
            }
        }
    }

    /// The primary's timeline and WAL position: where its WAL is flushed, which every visible
    /// commit is before (a commit is visible once flushed), unless commits do not wait for the
    /// flush (`synchronous_commit = off`): then where WAL is inserted. `nil` on a standby.
    static func observePrimary(_ client: PostgresClient, logger: Logger) async throws -> (timeline: Int32, position: Int64?) {
        let rows = try await client.query(
            """
            SELECT psync_timeline(),
                   CASE WHEN pg_is_in_recovery() THEN NULL
                        WHEN current_setting('synchronous_commit') = 'off' THEN (pg_current_wal_insert_lsn() - '0/0'::pg_lsn)::bigint
                        ELSE (pg_current_wal_flush_lsn() - '0/0'::pg_lsn)::bigint END
            """, logger: logger)
        for try await (timeline, position) in rows.decode((Int32, Int64?).self) { return (timeline, position) }
        throw PostgresDecodingError.Code.missingData
    }

    static func observeReplica(_ client: PostgresClient, logger: Logger) async throws -> ReplicaStateMachine.Observation {
        let rows = try await client.query(
            """
            SELECT pg_is_in_recovery(), (pg_last_wal_replay_lsn() - '0/0'::pg_lsn)::bigint, w.status, w.received_tli
            FROM (SELECT 1) AS one LEFT JOIN pg_stat_wal_receiver AS w ON true
            """, logger: logger)
        for try await (inRecovery, replayed, status, timeline) in rows.decode((Bool, Int64?, String?, Int32?).self) {
            return .init(inRecovery: inRecovery, replayed: replayed, receiverStatus: status, receiverTimeline: timeline)
        }
        throw PostgresDecodingError.Code.missingData
    }

    static func describe(_ error: any Error) -> String {
        if let error = error as? PSQLError {
            return error.serverInfo?[.message] ?? "\(error.code)"
        }
        return String(String(describing: error).prefix(200))
    }
}
