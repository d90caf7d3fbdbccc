import ArgumentParser
import EmbeddedPostgres
import Foundation
import Logging
import PartitionSync
import ServiceLifecycle
import SyncServer
import SyncStorage
import SyncTriggers
import UnixSignals

/// `psync serve`: runs the sync server until SIGINT or SIGTERM.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Run the sync server (HTTP and WebSocket on one port).")

    @OptionGroup var database: DatabaseOptions
    @OptionGroup var identity: IdentityOptions

    @Option(help: "Address to listen on (env PSYNC_HOST).")
    var host: String = ProcessInfo.processInfo.environment["PSYNC_HOST"] ?? "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one (env PSYNC_PORT).")
    var port: Int = EnvironmentDefault.value("PSYNC_PORT", default: 8080)

    @Option(name: .customLong("jwt-secret"), help: "Secret for signing access tokens, at least 32 bytes of random; make one with `openssl rand -base64 48` (env PSYNC_JWT_SECRET).")
    var jwtSecretOption: String?

    var jwtSecret: String? {
        jwtSecretOption ?? ProcessInfo.processInfo.environment["PSYNC_JWT_SECRET"].flatMap { $0.isEmpty ? nil : $0 }
    }

    @Option(name: .customLong("access-token-ttl"), help: "Access token lifetime in seconds (env PSYNC_ACCESS_TOKEN_TTL).")
    var accessTokenTTL: Int = EnvironmentDefault.value("PSYNC_ACCESS_TOKEN_TTL", default: 900)

    @Option(name: .customLong("bcrypt-cost"), help: "bcrypt cost of password hashes (env PSYNC_BCRYPT_COST).")
    var bcryptCost: UInt8 = EnvironmentDefault.value("PSYNC_BCRYPT_COST", default: 12)

    @Option(name: .customLong("refresh-grace"), help: "Seconds a used refresh token still answers, for a client whose answer was lost (env PSYNC_REFRESH_GRACE).")
    var refreshGrace: Int = EnvironmentDefault.value("PSYNC_REFRESH_GRACE", default: 10)

    @Option(name: .customLong("registrations-per-address"), help: "Registrations allowed per client address per registration window (env PSYNC_REGISTRATIONS_PER_ADDRESS).")
    var registrationsPerAddress: Int = EnvironmentDefault.value("PSYNC_REGISTRATIONS_PER_ADDRESS", default: 10)

    @Option(name: .customLong("registration-window"), help: "Seconds of the registration limit's window (env PSYNC_REGISTRATION_WINDOW).")
    var registrationWindow: Int = EnvironmentDefault.value("PSYNC_REGISTRATION_WINDOW", default: 3600)

    @Option(name: .customLong("failures-per-account-address"), help: "Failed logins of one account from one address per window (env PSYNC_FAILURES_PER_ACCOUNT_ADDRESS).")
    var failuresPerAccountAddress: Int = EnvironmentDefault.value("PSYNC_FAILURES_PER_ACCOUNT_ADDRESS", default: 10)

    @Option(name: .customLong("failures-per-address"), help: "Failed logins from one address per window (env PSYNC_FAILURES_PER_ADDRESS).")
    var failuresPerAddress: Int = EnvironmentDefault.value("PSYNC_FAILURES_PER_ADDRESS", default: 50)

    @Option(name: .customLong("failures-per-account"), help: "Failed logins of one account per window before its logins slow to one per backoff (env PSYNC_FAILURES_PER_ACCOUNT).")
    var failuresPerAccount: Int = EnvironmentDefault.value("PSYNC_FAILURES_PER_ACCOUNT", default: 100)

    @Option(name: .customLong("account-backoff-ms"), help: "Milliseconds between an account's logins once it is over its failure limit (env PSYNC_ACCOUNT_BACKOFF_MS).")
    var accountBackoffMilliseconds: Int = EnvironmentDefault.value("PSYNC_ACCOUNT_BACKOFF_MS", default: 1000)

    @Option(name: .customLong("failure-window"), help: "Seconds of the failed-login limits' window (env PSYNC_FAILURE_WINDOW).")
    var failureWindow: Int = EnvironmentDefault.value("PSYNC_FAILURE_WINDOW", default: 900)

    @Option(name: .customLong("password-hash-concurrency"), help: "bcrypt runs at once; default the number of cores (env PSYNC_PASSWORD_HASH_CONCURRENCY).")
    var passwordHashConcurrencyOption: Int?

    var passwordHashConcurrency: Int? {
        passwordHashConcurrencyOption ?? EnvironmentDefault.optional("PSYNC_PASSWORD_HASH_CONCURRENCY", as: Int.self)
    }

    @Option(name: .customLong("password-hash-queue"), help: "Logins and registrations that may wait for bcrypt; more are rate_limited (env PSYNC_PASSWORD_HASH_QUEUE).")
    var passwordHashQueue: Int = EnvironmentDefault.value("PSYNC_PASSWORD_HASH_QUEUE", default: 64)

    @Flag(name: .customLong("metrics-public"), help: "Serve /metrics without an admin API key (env PSYNC_METRICS_PUBLIC=true).")
    var metricsPublicFlag = false

    var metricsPublic: Bool {
        metricsPublicFlag || EnvironmentDefault.flag("PSYNC_METRICS_PUBLIC")
    }

    @Option(name: .customLong("trusted-proxy"), help: "An address or CIDR block (10.0.0.0/8) of a load balancer whose X-Forwarded-For names the client, for the per-address limits; repeatable (env PSYNC_TRUSTED_PROXIES, comma-separated). Default none: the header is ignored.")
    var trustedProxyOptions: [String] = []

    /// A repeatable option's values, or else the environment variable's, comma-separated.
    static func values(_ options: [String], orEnvironment name: String) -> [String] {
        guard options.isEmpty else { return options }
        return (ProcessInfo.processInfo.environment[name] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
    }

    /// The trusted proxies, from the options or else the environment.
    func trustedProxies() throws -> [AddressRange] {
        try Self.values(trustedProxyOptions, orEnvironment: "PSYNC_TRUSTED_PROXIES").map { text in
            guard let range = AddressRange(text) else { throw ValidationError("--trusted-proxy \(text) is not an address or a CIDR block (10.0.0.0/8, fd00::/8)") }
            return range
        }
    }

    @Option(name: .customLong("replica-url"), help: "A streaming replica of the database that snapshots and catch-ups may be read from once it has replayed what they need; repeatable (env PSYNC_REPLICA_URLS, comma-separated). The role needs pg_monitor there (docs/SCALING.md).")
    var replicaURLOptions: [String] = []

    @Option(name: .customLong("replica-poll-ms"), help: "Milliseconds between looks at each replica and at the primary (env PSYNC_REPLICA_POLL_MS).")
    var replicaPollMilliseconds: Int = EnvironmentDefault.value("PSYNC_REPLICA_POLL_MS", default: 250)

    @Option(name: .customLong("replica-max-lag-bytes"), help: "Bytes of WAL a replica may replay behind the primary and still be asked for pages (env PSYNC_REPLICA_MAX_LAG_BYTES).")
    var replicaMaximumLagBytes: Int64 = EnvironmentDefault.value("PSYNC_REPLICA_MAX_LAG_BYTES", default: 16 << 20)

    @Option(name: .customLong("replica-wait-ms"), help: "Milliseconds a replica a little behind is waited for before a page is read from the primary (env PSYNC_REPLICA_WAIT_MS).")
    var replicaWaitMilliseconds: Int = EnvironmentDefault.value("PSYNC_REPLICA_WAIT_MS", default: 50)

    @Option(name: .customLong("replica-read-timeout-ms"), help: "Milliseconds, beyond the wait, a connection to a replica may take to come, and a read on it to go without an answer or a row, before the page is read from the primary and the replica is out of reads until the monitor finds it right (env PSYNC_REPLICA_READ_TIMEOUT_MS).")
    var replicaReadTimeoutMilliseconds: Int = EnvironmentDefault.value("PSYNC_REPLICA_READ_TIMEOUT_MS", default: 2_000)

    /// The replicas, from the options or else the environment.
    func replicas() throws -> ReplicaConfiguration {
        var configuration = ReplicaConfiguration()
        configuration.urls = try Self.values(replicaURLOptions, orEnvironment: "PSYNC_REPLICA_URLS").map { text in
            do { return try DatabaseURL(text) } catch {
                throw ValidationError("--replica-url: \(String(describing: error).replacingOccurrences(of: "DATABASE_URL", with: "the replica's URL"))")
            }
        }
        configuration.pollInterval = .milliseconds(replicaPollMilliseconds)
        configuration.maximumLagBytes = replicaMaximumLagBytes
        configuration.wait = .milliseconds(replicaWaitMilliseconds)
        configuration.readTimeout = configuration.wait + .milliseconds(replicaReadTimeoutMilliseconds)
        configuration.poolSize = max(1, database.maximumConnections / 2)
        return configuration
    }

    @Option(name: .customLong("idle-timeout"), help: "Seconds a WebSocket may stay silent before it is closed (env PSYNC_IDLE_TIMEOUT).")
    var idleTimeout: Int = EnvironmentDefault.value("PSYNC_IDLE_TIMEOUT", default: 60)

    @Option(name: .customLong("trigger-lease"), help: "Seconds a trigger's lease lasts unrenewed: an instance that dies is replaced after at most this (env PSYNC_TRIGGER_LEASE).")
    var triggerLease: Int = EnvironmentDefault.value("PSYNC_TRIGGER_LEASE", default: 5)

    @Option(name: .customLong("presence-lease"), help: "Seconds after which the users of an instance that died count as gone (env PSYNC_PRESENCE_LEASE).")
    var presenceLease: Int = EnvironmentDefault.value("PSYNC_PRESENCE_LEASE", default: 15)

    @Option(name: .customLong("upload-transactions"), help: "Upload transactions run at once; uploads arriving meanwhile share the next commit (env PSYNC_UPLOAD_TRANSACTIONS).")
    var uploadTransactions: Int = EnvironmentDefault.value("PSYNC_UPLOAD_TRANSACTIONS", default: 2)

    @Option(name: .customLong("trigger-timeout"), help: "Seconds one step of a trigger (a handling transaction, a lease renewal, a read) may take before it is abandoned and retried; a handler committing parts of its work gets the whole timeout again at each part (env PSYNC_TRIGGER_TIMEOUT).")
    var triggerTimeout: Int = EnvironmentDefault.value("PSYNC_TRIGGER_TIMEOUT", default: 60)

    @Option(name: .customLong("trigger-run-events"), help: "Events a trigger with a run handler reads at once and handles in one transaction, at most (env PSYNC_TRIGGER_RUN_EVENTS).")
    var triggerRunEvents: Int = EnvironmentDefault.value("PSYNC_TRIGGER_RUN_EVENTS", default: 2_000)

    @Option(name: .customLong("trigger-run-bytes"), help: "Bytes of events (before and after images as JSON text) a trigger's read takes at most, one event at least (env PSYNC_TRIGGER_RUN_BYTES).")
    var triggerRunBytes: Int = EnvironmentDefault.value("PSYNC_TRIGGER_RUN_BYTES", default: 8 << 20)

    @Option(name: .customLong("trigger-transaction-bytes"), help: "Bytes of objects (as JSON text) an ordered trigger's handlers read in one transaction before it commits the events handled so far, one event at least (env PSYNC_TRIGGER_TRANSACTION_BYTES).")
    var triggerTransactionBytes: Int = EnvironmentDefault.value("PSYNC_TRIGGER_TRANSACTION_BYTES", default: 2 << 20)

    @Option(name: .customLong("trigger-part-bytes"), help: "Bytes of objects a trigger handler's applyInParts writes before it commits its work so far and goes on in a new transaction (env PSYNC_TRIGGER_PART_BYTES).")
    var triggerPartBytes: Int = EnvironmentDefault.value("PSYNC_TRIGGER_PART_BYTES", default: 8 << 20)

    @Option(name: .customLong("trigger-max-lag"), help: "Events a trigger may be behind before /health/triggers reports it (env PSYNC_TRIGGER_MAX_LAG).")
    var triggerMaxLag: Int64 = EnvironmentDefault.value("PSYNC_TRIGGER_MAX_LAG", default: 10_000)

    @Option(name: .customLong("stop-timeout"), help: "Seconds a graceful shutdown waits for the services once the sessions closed, before stopping without them (env PSYNC_STOP_TIMEOUT).")
    var stopTimeout: Int = EnvironmentDefault.value("PSYNC_STOP_TIMEOUT", default: 5)

    /// Set before this command is parsed, as the process starts (``MallocArenas``, from
    /// `PartitionSyncCommand.main`): here for its help and its bounds.
    @Option(name: .customLong("malloc-arenas"), help: "Malloc arenas glibc may keep for the server; fewer keep less memory after a load; 0 leaves glibc's own limit, eight per core (env PSYNC_MALLOC_ARENAS).")
    var mallocArenas: Int = EnvironmentDefault.value("PSYNC_MALLOC_ARENAS", default: MallocArenas.defaultCount)

    @Option(name: .customLong("log-level"), help: "trace, debug, info, notice, warning, error (env LOG_LEVEL).")
    var logLevel: String = EnvironmentDefault.logLevel("LOG_LEVEL")?.rawValue ?? "info"

    @Option(name: .customLong("api-key-session-lifetime"), help: "Seconds a WebSocket session opened with an API key lives before it must present the key again (env PSYNC_API_KEY_SESSION_LIFETIME).")
    var apiKeySessionLifetime: Int = EnvironmentDefault.value("PSYNC_API_KEY_SESSION_LIFETIME", default: 24 * 3600)

    @Option(name: .customLong("auth-timeout"), help: "Seconds a WebSocket without an Authorization header has to send 'auth' (env PSYNC_AUTH_TIMEOUT).")
    var authTimeout: Int = EnvironmentDefault.value("PSYNC_AUTH_TIMEOUT", default: 10)

    @Option(name: .customLong("unauthenticated-message-limit"), help: "Largest WebSocket message in bytes before 'auth' (env PSYNC_UNAUTHENTICATED_MESSAGE_LIMIT).")
    var unauthenticatedMessageLimit: Int = EnvironmentDefault.value("PSYNC_UNAUTHENTICATED_MESSAGE_LIMIT", default: 8 << 10)

    @Option(name: .customLong("max-sessions-per-user"), help: "Open WebSocket sessions one user may have on this instance (env PSYNC_MAX_SESSIONS_PER_USER).")
    var maxSessionsPerUser: Int = EnvironmentDefault.value("PSYNC_MAX_SESSIONS_PER_USER", default: 100)

    @Option(name: .customLong("page-bytes"), help: "Bytes of objects in one change page; a larger object goes alone (env PSYNC_PAGE_BYTES).")
    var pageBytes: Int = EnvironmentDefault.value("PSYNC_PAGE_BYTES", default: 4 << 20)

    @Option(name: .customLong("max-message-bytes"), help: "Largest WebSocket message (bytes) after auth, in one frame or several (env PSYNC_MAX_MESSAGE_BYTES).")
    var maxMessageBytes: Int = EnvironmentDefault.value("PSYNC_MAX_MESSAGE_BYTES", default: 16 << 20)

    @Option(name: .customLong("max-queued-uploads"), help: "Uploads one session may have waiting; past it the server stops reading it (env PSYNC_MAX_QUEUED_UPLOADS).")
    var maxQueuedUploads: Int = EnvironmentDefault.value("PSYNC_MAX_QUEUED_UPLOADS", default: 256)

    @Option(name: .customLong("session-queue-bytes"), help: "Bytes of change pages queued for one session before its slowest subscription pauses and catches up later (env PSYNC_SESSION_QUEUE_BYTES).")
    var sessionQueueBytes: Int = EnvironmentDefault.value("PSYNC_SESSION_QUEUE_BYTES", default: 4 << 20)

    @Option(name: .customLong("max-queued-replies"), help: "Replies queued for a client that does not read them before its session is closed with 4002; at least 100, the answers of one batch of uploads (env PSYNC_MAX_QUEUED_REPLIES).")
    var maxQueuedReplies: Int = EnvironmentDefault.value("PSYNC_MAX_QUEUED_REPLIES", default: 1_000)

    @Option(name: .customLong("upload-timeout"), help: "Seconds an upload transaction may take before its uploads are answered unavailable (env PSYNC_UPLOAD_TIMEOUT).")
    var uploadTimeout: Int = EnvironmentDefault.value("PSYNC_UPLOAD_TIMEOUT", default: 30)

    @Option(name: .customLong("lock-patience"), help: "Milliseconds an upload waits for its partition's lock, held by another transaction, before it is answered unavailable (env PSYNC_LOCK_PATIENCE_MS).")
    var lockPatience: Int = EnvironmentDefault.value("PSYNC_LOCK_PATIENCE_MS", default: 2_000)

    @Option(name: .customLong("blob-max-bytes"), help: "Largest blob in bytes (env PSYNC_BLOB_MAX_BYTES).")
    var blobMaxBytes: Int64 = EnvironmentDefault.value("PSYNC_BLOB_MAX_BYTES", default: 32 << 20)

    @Option(name: .customLong("blob-quota-bytes"), help: "Bytes of blobs one user or service may have uploaded (env PSYNC_BLOB_QUOTA_BYTES).")
    var blobQuotaBytes: Int64 = EnvironmentDefault.value("PSYNC_BLOB_QUOTA_BYTES", default: 1 << 30)

    @Option(name: .customLong("blob-grace"), help: "Seconds a blob no object references is kept after its upload (env PSYNC_BLOB_GRACE).")
    var blobGrace: Int = EnvironmentDefault.value("PSYNC_BLOB_GRACE", default: 3600)

    @Option(name: .customLong("blob-collect-interval"), help: "Seconds between collections of unreferenced blobs (env PSYNC_BLOB_COLLECT_INTERVAL).")
    var blobCollectInterval: Int = EnvironmentDefault.value("PSYNC_BLOB_COLLECT_INTERVAL", default: 600)

    @Option(name: .customLong("tombstone-retention"), help: "Seconds tombstones are kept; a client offline longer gets a reset (env PSYNC_TOMBSTONE_RETENTION).")
    var tombstoneRetention: Int = EnvironmentDefault.value("PSYNC_TOMBSTONE_RETENTION", default: 30 * 24 * 3600)

    @Option(name: .customLong("expiry-interval-ms"), help: "Milliseconds between looks for expired objects (env PSYNC_EXPIRY_INTERVAL_MS).")
    var expiryIntervalMilliseconds: Int = EnvironmentDefault.value("PSYNC_EXPIRY_INTERVAL_MS", default: 250)

    @Option(name: .customLong("expiry-batch"), help: "Expired objects deleted per transaction (env PSYNC_EXPIRY_BATCH).")
    var expiryBatch: Int = EnvironmentDefault.value("PSYNC_EXPIRY_BATCH", default: 1_000)

    func validate() throws {
        _ = (passwordHashConcurrency, metricsPublic)
        try EnvironmentDefault.check()
        guard Logger.Level(rawValue: logLevel.lowercased()) != nil else {
            throw ValidationError("--log-level is one of \(Logger.Level.allCases.map(\.rawValue).joined(separator: ", ")), not \"\(logLevel)\"")
        }
        try OptionBounds.check(bounds)
    }

    /// The values each numeric option takes (``OptionBounds``).
    var bounds: [OptionBounds] {
        [
            OptionBounds("--port", env: "PSYNC_PORT", port, 0...65_535),
            OptionBounds("--access-token-ttl", env: "PSYNC_ACCESS_TOKEN_TTL", accessTokenTTL, atLeast: 1),
            OptionBounds("--bcrypt-cost", env: "PSYNC_BCRYPT_COST", bcryptCost, 4...31),
            OptionBounds("--refresh-grace", env: "PSYNC_REFRESH_GRACE", refreshGrace, atLeast: 0),
            OptionBounds("--registrations-per-address", env: "PSYNC_REGISTRATIONS_PER_ADDRESS", registrationsPerAddress, atLeast: 0),
            OptionBounds("--registration-window", env: "PSYNC_REGISTRATION_WINDOW", registrationWindow, atLeast: 1),
            OptionBounds("--failures-per-account-address", env: "PSYNC_FAILURES_PER_ACCOUNT_ADDRESS", failuresPerAccountAddress, atLeast: 1),
            OptionBounds("--failures-per-address", env: "PSYNC_FAILURES_PER_ADDRESS", failuresPerAddress, atLeast: 1),
            OptionBounds("--failures-per-account", env: "PSYNC_FAILURES_PER_ACCOUNT", failuresPerAccount, atLeast: 1),
            OptionBounds("--account-backoff-ms", env: "PSYNC_ACCOUNT_BACKOFF_MS", accountBackoffMilliseconds, atLeast: 0),
            OptionBounds("--failure-window", env: "PSYNC_FAILURE_WINDOW", failureWindow, atLeast: 1),
            OptionBounds("--password-hash-concurrency", env: "PSYNC_PASSWORD_HASH_CONCURRENCY", passwordHashConcurrency ?? 1, 1...1_024),
            OptionBounds("--password-hash-queue", env: "PSYNC_PASSWORD_HASH_QUEUE", passwordHashQueue, atLeast: 0),
            OptionBounds("--replica-poll-ms", env: "PSYNC_REPLICA_POLL_MS", replicaPollMilliseconds, 10...3_600_000),
            OptionBounds("--replica-max-lag-bytes", env: "PSYNC_REPLICA_MAX_LAG_BYTES", replicaMaximumLagBytes, atLeast: 0),
            OptionBounds("--replica-wait-ms", env: "PSYNC_REPLICA_WAIT_MS", replicaWaitMilliseconds, 0...10_000),
            OptionBounds("--replica-read-timeout-ms", env: "PSYNC_REPLICA_READ_TIMEOUT_MS", replicaReadTimeoutMilliseconds, 10...600_000),
            OptionBounds("--idle-timeout", env: "PSYNC_IDLE_TIMEOUT", idleTimeout, atLeast: 1),
            OptionBounds("--trigger-lease", env: "PSYNC_TRIGGER_LEASE", triggerLease, atLeast: 1),
            OptionBounds("--presence-lease", env: "PSYNC_PRESENCE_LEASE", presenceLease, atLeast: 1),
            OptionBounds("--upload-transactions", env: "PSYNC_UPLOAD_TRANSACTIONS", uploadTransactions, atLeast: 1),
            OptionBounds("--trigger-timeout", env: "PSYNC_TRIGGER_TIMEOUT", triggerTimeout, atLeast: 1),
            OptionBounds("--trigger-run-events", env: "PSYNC_TRIGGER_RUN_EVENTS", triggerRunEvents, 1...100_000),
            OptionBounds("--trigger-run-bytes", env: "PSYNC_TRIGGER_RUN_BYTES", triggerRunBytes, atLeast: 1),
            OptionBounds("--trigger-part-bytes", env: "PSYNC_TRIGGER_PART_BYTES", triggerPartBytes, atLeast: 1),
            OptionBounds("--trigger-transaction-bytes", env: "PSYNC_TRIGGER_TRANSACTION_BYTES", triggerTransactionBytes, atLeast: 1),
            OptionBounds("--trigger-max-lag", env: "PSYNC_TRIGGER_MAX_LAG", triggerMaxLag, atLeast: 0),
            OptionBounds("--stop-timeout", env: "PSYNC_STOP_TIMEOUT", stopTimeout, atLeast: 1),
            OptionBounds("--malloc-arenas", env: "PSYNC_MALLOC_ARENAS", mallocArenas, 0...1_024),
            OptionBounds("--api-key-session-lifetime", env: "PSYNC_API_KEY_SESSION_LIFETIME", apiKeySessionLifetime, atLeast: 1),
            OptionBounds("--auth-timeout", env: "PSYNC_AUTH_TIMEOUT", authTimeout, atLeast: 1),
            OptionBounds("--unauthenticated-message-limit", env: "PSYNC_UNAUTHENTICATED_MESSAGE_LIMIT", unauthenticatedMessageLimit, atLeast: 1),
            OptionBounds("--max-sessions-per-user", env: "PSYNC_MAX_SESSIONS_PER_USER", maxSessionsPerUser, atLeast: 1),
            OptionBounds("--page-bytes", env: "PSYNC_PAGE_BYTES", pageBytes, atLeast: 1),
            OptionBounds("--max-message-bytes", env: "PSYNC_MAX_MESSAGE_BYTES", maxMessageBytes, atLeast: 1),
            OptionBounds("--max-queued-uploads", env: "PSYNC_MAX_QUEUED_UPLOADS", maxQueuedUploads, atLeast: 1),
            OptionBounds("--session-queue-bytes", env: "PSYNC_SESSION_QUEUE_BYTES", sessionQueueBytes, atLeast: 1),
            OptionBounds("--max-queued-replies", env: "PSYNC_MAX_QUEUED_REPLIES", maxQueuedReplies, atLeast: Int64(SessionConfiguration.minimumQueuedReplies)),
            OptionBounds("--upload-timeout", env: "PSYNC_UPLOAD_TIMEOUT", uploadTimeout, atLeast: 1),
            OptionBounds("--lock-patience", env: "PSYNC_LOCK_PATIENCE_MS", lockPatience, atLeast: 1),
            OptionBounds("--blob-max-bytes", env: "PSYNC_BLOB_MAX_BYTES", blobMaxBytes, atLeast: 0),
            OptionBounds("--blob-quota-bytes", env: "PSYNC_BLOB_QUOTA_BYTES", blobQuotaBytes, atLeast: 0),
            OptionBounds("--blob-grace", env: "PSYNC_BLOB_GRACE", blobGrace, atLeast: 0),
            OptionBounds("--blob-collect-interval", env: "PSYNC_BLOB_COLLECT_INTERVAL", blobCollectInterval, atLeast: 1),
            OptionBounds("--tombstone-retention", env: "PSYNC_TOMBSTONE_RETENTION", tombstoneRetention, atLeast: 0),
            OptionBounds("--expiry-interval-ms", env: "PSYNC_EXPIRY_INTERVAL_MS", expiryIntervalMilliseconds, atLeast: 10),
            OptionBounds("--expiry-batch", env: "PSYNC_EXPIRY_BATCH", expiryBatch, atLeast: 1),
        ]
    }

    func run() async throws {
        var logger = Logger(label: Served.commandName)
        logger.logLevel = Logger.Level(rawValue: logLevel.lowercased()) ?? .info
        // Anyone who knows the secret can sign in as any user: a weak one stops the start.
        if let jwtSecret, let weakness = JWTSecretPolicy.weakness(of: jwtSecret) {
            FileHandle.standardError.write(Data("\(Served.commandName): fatal: PSYNC_JWT_SECRET \(weakness); \(JWTSecretPolicy.advice)\n".utf8))
            throw ExitCode(78)  // EX_CONFIG
        }
        do {
            try ServerStartError.checkAddress(host: host, port: port)
        } catch let error as ServerStartError {
            FileHandle.standardError.write(Data("\(Served.commandName): fatal: \(error)\n".utf8))
            throw ExitCode(69)  // EX_UNAVAILABLE
        }
        let (url, embedded) = try await database.resolve(logger: logger)
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.databasePoolSize = database.maximumConnections
        configuration.databaseKeepAlive = database.keepAliveSeconds > 0 ? .seconds(database.keepAliveSeconds) : nil
        configuration.databaseIdleTimeout = .seconds(database.idleTimeoutSeconds)
        configuration.port = port
        configuration.auth.jwtSecret = try jwtSecret ?? database.persistentJWTSecret(embedded: embedded != nil, logger: logger)
        configuration.auth.accessTokenLifetime = .seconds(accessTokenTTL)
        configuration.auth.bcryptCost = bcryptCost
        configuration.auth.refreshReuseGrace = .seconds(refreshGrace)
        configuration.auth.registrationsPerAddress = registrationsPerAddress
        configuration.auth.registrationWindow = .seconds(registrationWindow)
        configuration.auth.failuresPerAccountAddress = failuresPerAccountAddress
        configuration.auth.failuresPerAddress = failuresPerAddress
        configuration.auth.failuresPerAccount = failuresPerAccount
        configuration.auth.accountBackoff = .milliseconds(accountBackoffMilliseconds)
        configuration.auth.failureWindow = .seconds(failureWindow)
        if let passwordHashConcurrency { configuration.auth.passwordHashConcurrency = passwordHashConcurrency }
        configuration.auth.passwordHashQueue = passwordHashQueue
        try identity.apply(to: &configuration.auth, logger: logger)
        configuration.metricsPublic = metricsPublic
        configuration.trustedProxies = try trustedProxies()
        configuration.replicas = try replicas()
        configuration.sessions.idleTimeout = .seconds(idleTimeout)
        configuration.triggers.leaseDuration = .seconds(triggerLease)
        configuration.triggers.leaseRenewal = .milliseconds(max(100, triggerLease * 1000 / 5))
        configuration.presenceLease = .seconds(presenceLease)
        configuration.uploadTransactions = uploadTransactions
        configuration.sessions.apiKeySessionLifetime = .seconds(apiKeySessionLifetime)
        configuration.sessions.authTimeout = .seconds(authTimeout)
        configuration.sessions.unauthenticatedMessageBytes = unauthenticatedMessageLimit
        configuration.sessions.maximumSessionsPerUser = maxSessionsPerUser
        configuration.storage.maximumPageBytes = pageBytes
        configuration.storage.lockPatience = .milliseconds(lockPatience)
        configuration.storage.statementBytes = database.statementBytes
        configuration.storage.countersPerObject = database.countersPerObject
        configuration.sessions.maximumMessageBytes = maxMessageBytes
        configuration.sessions.maximumQueuedUploads = maxQueuedUploads
        configuration.sessions.outboxLimitBytes = sessionQueueBytes
        configuration.sessions.outboxLimitReplies = maxQueuedReplies
        configuration.uploadTimeout = .seconds(uploadTimeout)
        configuration.triggers.operationTimeout = .seconds(triggerTimeout)
        configuration.triggers.maximumLag = triggerMaxLag
        configuration.triggers.eventsPerRun = triggerRunEvents
        configuration.triggers.runBytes = triggerRunBytes
        configuration.triggers.partBytes = triggerPartBytes
        configuration.triggers.bytesPerTransaction = triggerTransactionBytes
        configuration.stopTimeout = .seconds(stopTimeout)
        configuration.blobs.maximumBytes = blobMaxBytes
        configuration.blobs.quotaBytes = blobQuotaBytes
        configuration.blobs.unreferencedGrace = .seconds(blobGrace)
        configuration.blobs.collectInterval = .seconds(blobCollectInterval)
        configuration.retention.tombstones = .seconds(tombstoneRetention)
        configuration.expiry.interval = .milliseconds(expiryIntervalMilliseconds)
        configuration.expiry.batchSize = expiryBatch
        let server = SyncServer(configuration: configuration, database: url, application: Served.application, logger: logger)
        var services: [ServiceGroupConfiguration.ServiceConfiguration] = [.init(service: server)]
        if let embedded {
            services.append(.init(service: EmbeddedPostgresWatcher(postgres: embedded, logger: logger), successTerminationBehavior: .ignore))
        }
        let group = ServiceGroup(
            configuration: ServiceGroupConfiguration(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        do {
            try await group.run()
            try await embedded?.stop()
        } catch let error as ServerStartError {
            try? await embedded?.stop()
            // The first line it prints, and a clear one.
            FileHandle.standardError.write(Data("\(Served.commandName): fatal: \(error)\n".utf8))
            throw ExitCode(69)  // EX_UNAVAILABLE
        } catch {
            try? await embedded?.stop()
            throw error
        }
    }
}
