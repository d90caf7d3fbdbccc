import NIOCore
import PartitionSync
import SyncStorage
import SyncTriggers

/// Settings of the sync server. Every field has a default; `psync serve` sets them from
/// flags and environment variables (README.md, "Configuration").
package struct ServerConfiguration: Sendable {
    /// Address to listen on. Default `127.0.0.1`.
    package var host: String = "127.0.0.1"
    /// Port for HTTP and WebSocket; 0 picks a free one. Default 8080.
    package var port: Int = 8080
    /// The storage engine's limits and page sizes.
    package var storage: StorageConfiguration = .init()
    /// Authentication settings.
    package var auth: AuthConfiguration = .init(jwtSecret: nil)
    /// WebSocket session settings.
    package var sessions: SessionConfiguration = .init()
    /// What is pruned, and when.
    package var retention: RetentionConfiguration = .init()
    /// Blob size, quota and collection (docs/PROTOCOL.md, "Blobs").
    package var blobs: BlobConfiguration = .init()
    /// How expired objects are deleted (docs/PROTOCOL.md, "Expiry").
    package var expiry: ExpiryConfiguration = .init()
    /// Trigger processing settings.
    package var triggers: TriggerConfiguration = .init()
    /// How long an instance's presence rows live without renewal: when an instance dies, its
    /// users' sessions count as closed after at most this. Default 15 seconds.
    package var presenceLease: Duration = .seconds(15)
    /// Service names whose API keys may use the admin endpoints (`/v1/admin/…`) and read
    /// `/metrics`. Default `admin`.
    package var adminServices: Set<String> = ["admin"]
    /// Whether `/metrics` answers without an admin API key, for a scraper on a private
    /// network that cannot send one. Default `false`.
    package var metricsPublic: Bool = false
    /// Proxies (load balancers) whose `X-Forwarded-For` names the client, for the per-address
    /// limits (``ClientAddressResolver``). Default none: the peer is the client, and the
    /// header is ignored.
    package var trustedProxies: [AddressRange] = []
    /// How often the instance reads the versions of the partitions its sessions follow, in
    /// case a commit's notification was lost (its writer died between COMMIT and the
    /// notification). Default 1 second.
    package var changePollInterval: Duration = .seconds(1)
    /// How often the instance renews its row among the instances sharing the database and
    /// counts the others; an instance alone sends no NOTIFY, so this is how soon it starts
    /// announcing when another starts without being told (a starting instance tells the
    /// others at once, see ``InstanceService``). Its rows expire after five of these.
    /// Independent of ``changePollInterval``: deliveries between instances must not depend on
    /// the poll. Default 1 second.
    package var instanceHeartbeatInterval: Duration = .seconds(1)
    /// Streaming replicas that snapshots and catch-ups may be read from. Default none.
    package var replicas = ReplicaConfiguration()
    /// Connections in the PostgreSQL pool at most. Default 20.
    package var databasePoolSize: Int = 20
    /// How often an idle pooled connection is checked with a query, so a connection that died
    /// unnoticed (a dropped network path) is replaced before a request meets it; `nil`: never.
    /// Each return of a connection to the pool starts a timer of this length, whose memory
    /// (about 0.7 KB) stays until it would have fired even when the connection is taken again
    /// at once: the shorter, the less memory a load holds. Default 10 seconds (postgres-nio's
    /// own default is 30).
    package var databaseKeepAlive: Duration? = .seconds(10)
    /// How long a pooled connection may go unused before the pool closes it. Like the
    /// keep-alive, each return of a connection to the pool starts a timer of this length whose
    /// memory (about 0.7 KB) stays until it would have fired, even when the connection is taken
    /// again at once; at postgres-nio's 60 seconds those timers were the largest thing a load
    /// held (a third of the server's memory in `soak`, and most of what stayed fragmented after
    /// it: docs/PERFORMANCE.md). Default 15 seconds.
    package var databaseIdleTimeout: Duration = .seconds(15)
    /// ``replicas`` with the primary pool's keep-alive and idle timeout: the replicas' pools
    /// keep their connections as the primary's does.
    package var replicaPools: ReplicaConfiguration {
        var pools = replicas
        pools.keepAlive = databaseKeepAlive
        pools.idleTimeout = databaseIdleTimeout
        return pools
    }
    /// Upload transactions this instance runs at once. Uploads that arrive while they run
    /// wait and then share the next commit, many clients' uploads in one transaction (each
    /// still all-or-nothing on its own). Default 2.
    package var uploadTransactions: Int = 2
    /// How long an upload transaction may take before its uploads are answered `unavailable`
    /// (the client sends them again; their request ids keep that harmless) and the next ones
    /// go on: a query on a connection that died with its database may never answer. Default
    /// 30 seconds.
    package var uploadTimeout: Duration = .seconds(30)
    /// Name reported in logs and the `server` header. Default `psync`.
    package var name: String = "psync"
    /// How long a graceful shutdown waits for the services (triggers, presence, listener, …)
    /// after the sessions have closed, before it stops without them: a service waiting on a
    /// database that does not answer cannot hold the process. Default 5 seconds.
    package var stopTimeout: Duration = .seconds(5)
    /// The clock every timeout, interval and lifetime of the server is measured on, and the
    /// wall time it stores and compares: the system's, or a test's `MockClock`. Default
    /// ``SyncClock/system``.
    package var time: SyncClock = .system

    package init() {}
}

/// Settings of authentication.
package struct AuthConfiguration: Sendable {
    /// Secret for signing access tokens (HS256): at least 32 bytes, and neither a published
    /// example, a placeholder nor low in entropy (``JWTSecretPolicy``), or the server refuses
    /// to start. `nil`: a random secret per process, so tokens do not survive a restart and
    /// are not accepted by other instances.
    package var jwtSecret: String?
    /// Lifetime of an access token. Default 15 minutes.
    package var accessTokenLifetime: Duration = .seconds(15 * 60)
    /// Lifetime of a refresh token. Default 30 days.
    package var refreshTokenLifetime: Duration = .seconds(30 * 24 * 3600)
    /// bcrypt cost of password hashes (4–31). Default 12; tests use 4.
    package var bcryptCost: UInt8 = 12
    /// Shortest password accepted. Default 8.
    package var minimumPasswordLength: Int = 8
    /// How long a used refresh token still answers, with another token of its family, for a
    /// client whose refresh answer was lost; reused later, it revokes the family. Default 10 seconds.
    package var refreshReuseGrace: Duration = .seconds(10)
    /// Failed logins allowed for one account from one client address in one window; then
    /// that address may not log in to that account until the window ends. Default 10.
    package var failuresPerAccountAddress: Int = 10
    /// Failed logins allowed per client address in one window, whatever the account. Default 50.
    package var failuresPerAddress: Int = 50
    /// Failed logins of one account, from all addresses, in one window after which its logins
    /// are slowed to one per ``accountBackoff`` (never locked). Default 100.
    package var failuresPerAccount: Int = 100
    /// The wait after an account's failed login once it is over ``failuresPerAccount``. Default 1 second.
    package var accountBackoff: Duration = .seconds(1)
    /// The window of the failed-login limits. Default 15 minutes.
    package var failureWindow: Duration = .seconds(15 * 60)
    /// Registrations allowed per client address in one ``registrationWindow``. Default 10.
    package var registrationsPerAddress: Int = 10
    /// The window of the registration limit. Default 1 hour.
    package var registrationWindow: Duration = .seconds(3600)
    /// bcrypt hashes and verifications run at once; more wait. Default: the number of cores.
    package var passwordHashConcurrency: Int = System.coreCount
    /// Registrations and logins that may wait for bcrypt; more are answered `rate_limited`. Default 64.
    package var passwordHashQueue: Int = 64
    /// Whether and how accounts verify their email (docs/SECURITY.md, "Identity").
    package var emailVerification: EmailVerificationConfiguration = .init()
    /// OpenID Connect providers whose access tokens the server accepts beside its own
    /// (docs/SECURITY.md, "Identity providers"). Default none.
    package var identityProviders: [IdentityProviderConfiguration] = []

    package init(jwtSecret: String?) {
        self.jwtSecret = jwtSecret
    }
}

/// Settings of WebSocket sessions.
package struct SessionConfiguration: Sendable {
    /// A session that sends nothing (no ping, no request) for this long is closed with code
    /// 4000. Default 60 seconds.
    package var idleTimeout: Duration = .seconds(60)
    /// Time a connection without an `Authorization` header has to authenticate with `auth`,
    /// counted from the upgrade, however slowly it sends: it is then closed with 4001.
    /// Default 10 seconds.
    package var authTimeout: Duration = .seconds(10)
    /// Bytes of change batches queued for one session before its slowest subscription is
    /// paused and later resumed from its last delivered cursor. Default 4 MiB.
    package var outboxLimitBytes: Int = 4 << 20
    /// Replies (acks, errors, pongs) queued for a client that does not read before the session
    /// is closed with code 4002. Default 1,000; at least ``minimumQueuedReplies``.
    package var outboxLimitReplies: Int = 1_000
    /// The fewest replies a session's queue may be limited to: the answers of one batch of
    /// uploads go in together.
    package static let minimumQueuedReplies = SyncSession.maximumBatchUploads
    /// Largest message a client may send after it is authenticated, in bytes, in one frame or
    /// several (a longer one closes the connection with 1009). Default 16 MiB.
    package var maximumMessageBytes: Int = 16 << 20
    /// Largest WebSocket frame, in bytes, either way: longer messages are sent in several
    /// frames (and a client's frames may not be longer). Default 1 MiB.
    package var maximumFrameBytes: Int = 1 << 20
    /// Objects per change batch sent to a client. Default 500.
    package var batchSize: Int = 500
    /// Most partitions one session may subscribe to. Default 1,000.
    package var maximumSubscriptions: Int = 1_000
    /// How long a graceful shutdown waits for sessions to finish their uploads and close
    /// before the server stops anyway. Default 10 seconds.
    package var shutdownTimeout: Duration = .seconds(10)
    /// How long the server waits for the client's close frame after sending its own (a close
    /// of any code) before it closes the connection without it. Default 10 seconds.
    package var closeTimeout: Duration = .seconds(10)
    /// Longest life of a session opened with an API key (API keys do not expire): it is then
    /// closed with 4001 (`token_expired`). Sending `auth` with the key again re-validates the
    /// key and starts a new period. Default 24 hours.
    package var apiKeySessionLifetime: Duration = .seconds(24 * 3600)
    /// Largest message, in bytes, a connection may send before it is authenticated (an `auth`
    /// message is far smaller): a longer one closes it with 1009 as soon as its frames pass
    /// the limit, instead of being read whole. Default 8 KiB.
    package var unauthenticatedMessageBytes: Int = 8 << 10
    /// Open WebSocket sessions one user may have on one instance; one more is refused with
    /// `too_many_sessions` (429 at the upgrade, or close 4003 after `auth`). API-key sessions
    /// are not counted. Default 100.
    package var maximumSessionsPerUser: Int = 100
    /// Uploads one session may have received and not yet applied; past it the server stops
    /// reading the session's messages until one is applied (backpressure on a client that
    /// pipelines faster than its uploads commit). Default 256.
    package var maximumQueuedUploads: Int = 256

    package init() {}
}
