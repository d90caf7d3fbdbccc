import PartitionSync
import SyncProtocol

/// Settings of trigger processing.
package struct TriggerConfiguration: Sendable {
    /// Events deeper than this (a trigger's write firing a trigger firing a trigger …) are not
    /// handled but dead-lettered with `trigger_depth_exceeded`. Default 8.
    package var maximumDepth: Int = 8
    /// How long a trigger's lease lasts without renewal: an instance that dies is replaced
    /// after at most this. Default 5 seconds.
    package var leaseDuration: Duration = .seconds(5)
    /// How often the lease holder renews, and how often others try to take it. Default 1 second.
    package var leaseRenewal: Duration = .seconds(1)
    /// Events read per batch by a trigger with an event handler. Default 100.
    package var batchSize: Int = 100
    /// Events a trigger with a run handler reads at once and hands to its handler in one
    /// transaction: at most this many, and no more once their before and after images (as JSON
    /// text, not compressed as stored) reach ``runBytes``. A trigger that fell behind catches up
    /// in runs this large, and what its handler does once per run for everything the run changed
    /// (an unread count raised once by a room's new messages) is done fewer times. Default 2,000.
    package var eventsPerRun: Int = 2_000
    /// The bytes of events one read takes at most (one event at least), their before and after
    /// images as JSON text: a run's, and an event handler's batch (``batchSize``). Default 8 MiB.
    package var runBytes: Int = 8 << 20
    /// Bytes of objects a handler's ``TriggerContext/applyInParts(_:)`` writes before it
    /// commits the handling transaction's work so far and goes on in a new one. Default 8 MiB.
    package var partBytes: Int = 8 << 20
    /// Events an ordered trigger handles in one transaction, in order, with one commit for all
    /// (a failure rolls the transaction back and the events are handled again one by one, each
    /// with its retries). Default 50; 1 commits every event on its own. A trigger with a run
    /// handler takes every event of a read (``eventsPerRun``) in one transaction.
    package var eventsPerTransaction: Int = 50
    /// An ordered trigger's transaction also ends, before `eventsPerTransaction`, after the
    /// event that brings it to this many object changes: a run whose events each change many
    /// (large) objects does not hold them all in memory at once. Default 2,000.
    package var changesPerTransaction: Int = 2_000
    /// An ordered trigger's transaction also ends, before `eventsPerTransaction`, after the
    /// event that brings the objects it read to this many bytes of JSON text
    /// (``WriteTransaction/bytesRead``): handlers that each read and change a large record (a
    /// presence set in a User record listing a room of 5,000, 0.4 MB) hold a few of them at
    /// once, not fifty, parsed and then encoded with their events. Default 2 MiB: about five
    /// such records, each held as a tree several times its text.
    package var bytesPerTransaction: Int = 2 << 20
    /// How long to wait for new events before looking again without a notification. Default 1 second.
    package var pollInterval: Duration = .seconds(1)
    /// How long the sequencer lets commits gather after it is woken, before it numbers them:
    /// under load one pass numbers the events of many commits. Default 10 ms.
    package var sequencingDelay: Duration = .milliseconds(10)
    /// The longest a trigger's loop waits for one step: taking or renewing its lease, reading
    /// events, one handling transaction (the handler included), a dead letter. A step that
    /// takes longer (a connection that died mid-transaction, a pool that does not answer) is
    /// abandoned and logged, and, like a database that went away, uses up none of an event's
    /// attempts; the loop goes on from the stored position. Default 60 seconds.
    package var operationTimeout: Duration = .seconds(60)
    /// A trigger more events behind the log than this is reported unhealthy
    /// (`/health/triggers`, `psync triggers list`). Default 10,000.
    package var maximumLag: Int64 = 10_000
    /// The clock every wait, timeout, backoff, lease renewal and interval of the triggers is
    /// measured on, and the wall time of their metrics and the watchdog. Default the system's;
    /// a test's `MockClock`.
    package var time: SyncClock = .system

    package init() {}
}
