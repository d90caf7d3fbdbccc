import Foundation
import Hummingbird
import HummingbirdCore
import Locking
import Logging
import NIOCore
import PartitionSync
import PostgresNIO
import ServiceLifecycle
import SyncProtocol
import SyncStorage
import SyncTriggers

/// The sync server: HTTP and WebSocket on one port, over one PostgreSQL database.
///
/// It applies the migrations, then serves until graceful shutdown: the sessions close with
/// 1001 after finishing the upload in progress, then the change listener, the hub and the
/// database client stop. Run it in a `ServiceGroup`:
///
/// ```swift
/// var permissions = Permissions()
/// permissions.register(OwnerRule(), for: PartitionKind("user"))
/// let server = SyncServer(configuration: .init(), database: try DatabaseURL(url), permissions: permissions, logger: logger)
/// try await ServiceGroup(services: [server], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger).run()
/// ```
package final class SyncServer: Service, Sendable {
    package let configuration: ServerConfiguration
    package let database: DatabaseURL
    package let application: SyncApplication
    package var permissions: Permissions { application.permissions }
    package let metrics = ServerMetrics()
    /// This instance's name: trigger leases and presence rows are held under it.
    package let instance: String
    let logger: Logger
    private let bound = Locked<(port: Int?, waiters: [CheckedContinuation<Int, any Error>])>((nil, []))
    private let runningHub = Locked<SubscriptionHub?>(nil)
    private let runningInstances = Locked<InstanceService?>(nil)
    private let revocations: RevocationList
    private let sessions: SessionRegistry
    /// What `/ready` says; a graceful shutdown (the sessions' wind-down) makes it 503 and
    /// refuses new WebSockets.
    private let readiness: Readiness
    /// Opens when the HTTP server listens: the other services start then (``AfterListening``).
    private let listeningGate = Gate()

    /// Feeds and live members of the hub (for tests and diagnostics).
    package var hubCounts: (feeds: Int, members: Int) {
        runningHub.withLock { $0?.counts } ?? (0, 0)
    }

    private let servingStore = Locked<ObjectStore?>(nil)
    /// Whether the server is still waiting for its database to take a first connection (a
    /// graceful stop then has nothing to wind down, and ends the wait at once: `stopped`).
    private let databaseWait = Locked(DatabaseWaitState.waiting)
    private enum DatabaseWaitState { case waiting, answered, stopped }

    /// The element indexes the searches of the store the server serves with read, once its
    /// database is prepared (for tests).
    package var elementIndexNames: Set<String> { servingStore.withLock { $0 }?.elementIndexNames ?? [] }

    /// Open sessions holding a task, their worker's or their reader's (for tests: none once
    /// every session is idle).
    package var sessionTasksHeld: Int { sessions.tasksHeld }

    /// Open sessions (for tests).
    package var sessionCount: Int { sessions.count }

    package init(
        configuration: ServerConfiguration, database: DatabaseURL, application: SyncApplication, logger: Logger
    ) {
        self.configuration = configuration
        self.database = database
        self.application = application
        self.logger = logger
        let revocations = RevocationList(now: configuration.time.now)
        self.revocations = revocations
        self.sessions = SessionRegistry(revocations: revocations, time: configuration.time)
        self.readiness = Readiness(sessions: sessions)
        let host = ProcessInfo.processInfo.hostName
        self.instance = "\(host)-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))"
    }

    /// The port the server listens on, once it does.
    package func waitUntilListening() async throws -> Int {
        try await withCheckedThrowingContinuation { continuation in
            bound.withLock { state in
                if let port = state.port { continuation.resume(returning: port) } else { state.waiters.append(continuation) }
            }
        }
    }

    package func run() async throws {
        var clientConfiguration = database.clientConfiguration
        clientConfiguration.options.maximumConnections = configuration.databasePoolSize
        clientConfiguration.options.keepAliveBehavior = configuration.databaseKeepAlive.map { .init(frequency: $0) }
        clientConfiguration.options.connectionIdleTimeout = configuration.databaseIdleTimeout
        // How an operator tells this server's connections apart in `pg_stat_activity`.
        clientConfiguration.options.additionalStartupParameters.append(("application_name", "psync"))
        let client = PostgresClient(configuration: clientConfiguration, backgroundLogger: logger)
        let replicas = configuration.replicas.urls.isEmpty
            ? nil
            : ReadReplicas(
                configuration: configuration.replicaPools, primary: client, applicationName: "psync", time: configuration.time,
                metricsFactory: metrics.factory, logger: logger)
        do {
            // One store for the preparation and the serving: the element indexes it creates are
            // the ones its searches read.
            let store = ObjectStore(client: client, configuration: configuration.storage, replicas: replicas, logger: logger)
            servingStore.withLock { $0 = store }
            let (app, triggerHealth) = try await makeApplication(client: client, store: store)
            self.triggerHealth.withLock { $0 = triggerHealth }
            // The application runs in a service group of its own, so the outer graceful
            // shutdown reaches it only after the sessions have wound down: each finishes the
            // upload it is applying, answers it, and closes with 1001. Then the HTTP server
            // stops, then the listener and hub, and the database client last.
            let inner = ServiceGroup(services: [app], gracefulShutdownSignals: [], logger: logger)
            // Detached so the group does not inherit this task's graceful shutdown: a nested
            // service group would cascade it to the server at once, and the WebSocket layer
            // would close every session with 1000 before their uploads are answered.
            let running = Task.detached {
                // The database client runs beside the group and stops after it: the last to go.
                try await withThrowingTaskGroup(of: Void.self) { group in
                    // The pool runs before anything uses it: the task says so as it enters
                    // `run()`, whose first step marks the client running.
                    let (started, starting) = AsyncStream.makeStream(of: Void.self)
                    group.addTask {
                        starting.finish()
                        await client.run()
                    }
                    for await _ in started {}
                    // As long as it takes, saying so (the pool would retry in silence).
                    try await DatabaseReachability(url: self.database, patience: .forever, time: self.configuration.time).wait(logger: self.logger)
                    // A stop that came as the database answered wins: nothing was served yet.
                    let answered = self.databaseWait.withLock { state in
                        guard state == .waiting else { return false }
                        state = .answered
                        return true
                    }
                    guard answered else { throw CancellationError() }
                    try await self.prepareDatabase(client: client, store: store)
                    if let replicas { group.addTask { await replicas.run() } }
                    // Registered before serving, so the other instances start announcing.
                    try await self.runningInstances.withLock { $0 }?.register()
                    try await inner.run()
                    group.cancelAll()
                }
            }
            try await withTaskCancellationHandler {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    // Awaited through `withDeadline`, which returns when cancelled: a task's value
                    // awaited directly holds the group until the task ends, however long.
                    group.addTask {
                        do { try await withDeadline(nil, "the server") { try await running.value } } catch is CancellationError where self.databaseWait.withLock({ $0 == .stopped }) {
                            // Stopped while waiting for the database: a graceful stop, not a failure.
                        }
                    }
                    group.addTask {
                        try await gracefulShutdown()
                        if self.databaseWait.withLock({ state in
                            guard state == .waiting else { return false }
                            state = .stopped
                            return true
                        }) {
                            // Nothing was started to wind down: the wait ends with the task.
                            self.logger.notice("stopping before the database answered")
                            running.cancel()
                            _ = try? await withDeadline(self.configuration.stopTimeout, "the wait for the database") { try await running.value }
                            return
                        }
                        await self.sessions.windDown(timeout: self.configuration.sessions.shutdownTimeout)
                        await inner.triggerGracefulShutdown()
                        do {
                            try await withDeadline(self.configuration.stopTimeout, "the services to stop") { try await running.value }
                        } catch let error as DeadlineError {
                            // A service waiting on a database that does not answer: stop without it.
                            self.logger.error("stopping without waiting further for the services", metadata: ["reason": "\(error)"])
                            running.cancel()
                            _ = try? await withDeadline(.seconds(2), "the cancelled services") { try await running.value }
                        }
                    }
                    try await group.next()
                    group.cancelAll()
                }
            } onCancel: {
                running.cancel()
            }
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            let failure = ServerStartError.addressInUse(host: configuration.host, port: configuration.port)
            failWaiters(failure)
            throw failure
        } catch {
            failWaiters(error)
            throw error
        }
    }

    private let triggerHealth = Locked<TriggerHealth?>(nil)

    /// What the trigger watchdog last found, once the server runs.
    package var triggers: TriggerHealth? { triggerHealth.withLock { $0 } }

    /// Checks the open sessions for timeouts now, as the periodic sweep does: for a test that
    /// moved a `MockClock` past a deadline.
    package func sweepSessions() {
        sessions.sweep()
    }

    private func makeApplication(client: PostgresClient, store: ObjectStore) async throws -> (some Service, TriggerHealth) {
        let readiness = self.readiness
        let issuer = try await TokenIssuer(
            secret: configuration.auth.jwtSecret, lifetime: configuration.auth.accessTokenLifetime, time: configuration.time)
        if configuration.auth.jwtSecret == nil {
            logger.warning("no JWT secret configured: tokens are signed with a random key and die with this process")
        }
        let auth = AuthService(store: store, configuration: configuration.auth, issuer: issuer, revocations: revocations, logger: logger)
        let uploads = UploadService(
            store: store, permissions: permissions, metrics: metrics, logger: logger, concurrency: configuration.uploadTransactions,
            timeout: configuration.uploadTimeout)
        let hub = SubscriptionHub(
            store: store, batchSize: configuration.sessions.batchSize, pollInterval: configuration.changePollInterval,
            time: configuration.time, metrics: metrics, logger: logger)
        runningHub.withLock { $0 = hub }
        // This instance's own commits reach its subscribers at once, from memory; the
        // listener brings the other instances' commits.
        store.observeCommits { commit in hub.committedLocally(commit) }
        store.screenReleasedChanges(hub.changeScreen)
        let triggers = TriggerService(
            store: store, triggers: application.triggers, configuration: configuration.triggers, instance: instance,
            metricsFactory: metrics.factory, logger: logger)
        let instances = InstanceService(
            registry: InstanceRegistry(store: store, instance: instance, lease: configuration.instanceHeartbeatInterval * 5),
            interval: configuration.instanceHeartbeatInterval, time: configuration.time, logger: logger)
        runningInstances.withLock { $0 = instances }
        let listener = ChangeListener(
            url: database, hub: hub, readiness: readiness, revocations: revocations, revocationLedger: RevocationLedger(store: store),
            time: configuration.time, logger: logger
        ) { notification in
            if case .instanceArrived = notification {
                instances.arrived()
            } else {
                triggers.notified(notification)
            }
        }
        let presence = PresenceService(
            ledger: PresenceLedger(store: store, instance: instance, lease: configuration.presenceLease), time: configuration.time,
            logger: logger)
        // Registration counters share the failures' table and outlive it when their window is longer.
        let maintenance = MaintenanceService(
            store: store, retention: configuration.retention,
            failureWindow: max(configuration.auth.failureWindow, configuration.auth.registrationWindow), time: configuration.time,
            logger: logger)
        let userSessions = UserSessionCounts(limit: configuration.sessions.maximumSessionsPerUser)
        let services = SessionServices(
            store: store, hub: hub, permissions: permissions, auth: auth, uploads: uploads, metrics: metrics,
            presence: presence, userSessions: userSessions, sessions: sessions, configuration: configuration.sessions,
            time: configuration.time, logger: logger)

        let routes = RouteTable()
        let router = Router(context: SyncRequestContext.self)
        router.add(middleware: ErrorMiddleware(metrics: metrics, routes: routes))
        HTTPRoutes(
            store: store, auth: auth, permissions: permissions, uploads: uploads, metrics: metrics, readiness: readiness,
            adminServices: configuration.adminServices, metricsPublic: configuration.metricsPublic,
            triggerHealth: triggers.health, clientAddresses: ClientAddressResolver(trusted: configuration.trustedProxies)
        ).add(to: router)
        let history = MetricsHistory(metrics: metrics, time: configuration.time)
        AdminRoutes(
            access: AdminAccess(auth: auth, services: configuration.adminServices), store: store, auth: auth, hub: hub,
            history: history, triggers: TriggerAdmin(store: store, triggers: application.triggers, logger: logger), instance: instance
        ).add(to: router)
        ConsoleRoutes().add(to: router)
        WebClientRoutes().add(to: router)
        WebAppRoutes(web: application.web).add(to: router)
        let blobs = BlobStore(
            client: client, content: PostgresBlobContent(client: client, chunkSize: configuration.blobs.chunkBytes, logger: logger),
            logger: logger)
        BlobRoutes(
            blobs: blobs, store: store, auth: auth, permissions: permissions, configuration: configuration.blobs, metrics: metrics
        ).add(to: router)
        metrics.sampleSizes { [hub] in
            let counts = hub.counts
            return (counts.feeds, counts.members, hub.watchedInputs)
        }
        let upgrade = SessionUpgrade(services: services, sessions: sessions, readiness: readiness)

        routes.load([router])
        let app = Application(
            router: router,
            // HTTP/1.1, and WebSocket sessions served by channel handlers after the upgrade
            // (SyncChildChannel). No automatic pings: a client that stays silent is closed
            // after the idle timeout (clients ping), and a timer per connection is memory.
            server: HTTPServerBuilder { responder in
                SyncChildChannel(responder: responder, upgrade: upgrade, http1: .init(idleTimeout: nil))
            },
            configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: configuration.name),
            // Shut down in reverse order: the server first. They start once the server
            // listens: a server that cannot listen stops before any of them touched the database.
            services: [
                AfterListening(hub, gate: listeningGate), AfterListening(listener, gate: listeningGate),
                AfterListening(triggers, gate: listeningGate), AfterListening(presence, gate: listeningGate),
                AfterListening(maintenance, gate: listeningGate), AfterListening(instances, gate: listeningGate),
                AfterListening(
                    ExpiryService(store: store, configuration: configuration.expiry, metrics: metrics, time: configuration.time, logger: logger),
                    gate: listeningGate),
                AfterListening(
                    BlobCollector(
                        blobs: blobs, configuration: configuration.blobs, releasedFor: configuration.retention.tombstones,
                        metrics: metrics, time: configuration.time, logger: logger),
                    gate: listeningGate),
                AfterListening(sessions, gate: listeningGate),
                AfterListening(MemoryReleaser(sessions: sessions, time: configuration.time, logger: logger), gate: listeningGate),
                AfterListening(history, gate: listeningGate),
            ],
            onServerRunning: { channel in self.listening(on: channel) },
            logger: logger
        )
        return (app, triggers.health)
    }

    /// Before anything else runs: the migrations, the application's indexes, and its triggers'
    /// rows. A trigger new to this database starts at the end of the event log, so it is
    /// registered before the server accepts the requests whose events it must see.
    ///
    /// `store` is the one the server serves with: creating the indexes tells it which element
    /// indexes are kept, and its searches read their entries (a store of its own here left the
    /// server's searches scanning every object of the collection).
    private func prepareDatabase(client: PostgresClient, store: ObjectStore) async throws {
        try application.permissions.check()
        try store.declareCounters(application.counters, indexes: application.indexes)
        try await Migrator(client: client, logger: logger).migrate()
        try await store.createIndexes(application.indexes)
        let ledger = TriggerLedger(store: store)
        var new: [String] = []
        for trigger in application.triggers where try await ledger.register(trigger.name) { new.append(trigger.name) }
        // Instances record only the events their own triggers match, and every event once
        // they see a trigger they do not know (docs/TRIGGERS.md, "Which events are recorded").
        // While other instances run, a new trigger starts only after they have all looked.
        if !new.isEmpty, try await ledger.anyLeaseHeld() {
            logger.info("new triggers: waiting until the running instances record their events", metadata: ["triggers": "\(new)"])
            try await configuration.time.sleep(for: configuration.triggers.pollInterval * 2)
            try await ledger.restart(new)
        }
    }

    private func listening(on channel: any Channel) {
        listeningGate.open()
        let port = channel.localAddress?.port ?? configuration.port
        logger.info("listening", metadata: ["host": "\(configuration.host)", "port": "\(port)"])
        let waiters = bound.withLock { state -> [CheckedContinuation<Int, any Error>] in
            state.port = port
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(returning: port) }
    }

    private func failWaiters(_ error: any Error) {
        let waiters = bound.withLock { state -> [CheckedContinuation<Int, any Error>] in
            defer { state.waiters = [] }
            return state.waiters
        }
        for waiter in waiters { waiter.resume(throwing: error) }
    }
}
