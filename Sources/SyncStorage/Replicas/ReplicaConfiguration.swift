/// The streaming replicas snapshots and catch-ups may be read from (docs/SCALING.md, "Reads
/// from replicas"), and how they are watched.
package struct ReplicaConfiguration: Sendable {
    /// One URL per replica (`--replica-url`, repeatable); none: every read goes to the primary.
    package var urls: [DatabaseURL] = []
    /// How often the monitor looks at the primary and at each replica (`--replica-poll-ms`).
    package var pollInterval: Duration = .milliseconds(250)
    /// A replica whose replay is more than this many bytes of WAL behind the primary's position
    /// serves no pages until it catches up (`--replica-max-lag-bytes`).
    package var maximumLagBytes: Int64 = 16 << 20
    /// How long a replica a little behind is waited for, on the replica, before the page is
    /// read from the primary (`--replica-wait-ms`): replay trails a writing primary by
    /// milliseconds.
    package var wait: Duration = .milliseconds(50)
    /// A connection to a replica that does not come within this (its wait included;
    /// `--replica-read-timeout-ms` beyond the wait), or a read on it that goes this long
    /// without an answer or a row, has the page read from the primary, and the replica serves
    /// none until the monitor finds it right again: a stopped or frozen replica, whose pool
    /// would wait to reconnect or whose connection would never answer.
    package var readTimeout: Duration = .seconds(2)
    /// Connections to each replica.
    package var poolSize: Int = 10
    /// How often an idle pooled connection to a replica is checked with a query (`nil`: never):
    /// the server gives the replicas' pools its primary's setting (`--db-keepalive`).
    package var keepAlive: Duration? = .seconds(10)
    /// How long a pooled connection to a replica may go unused before it is closed: the
    /// primary's setting too (`--db-idle-timeout`; each return of a connection holds a timer
    /// this long, docs/PERFORMANCE.md).
    package var idleTimeout: Duration = .seconds(15)
    /// A look at a replica that takes longer takes it out of reads.
    package var lookTimeout: Duration = .seconds(2)

    package init() {}
}
