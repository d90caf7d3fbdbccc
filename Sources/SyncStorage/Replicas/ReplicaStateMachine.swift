/// Which streaming replicas may serve pages, as a value without I/O: what the
/// ``ReplicaMonitor`` observed of each replica and of the primary, and which replica a page
/// read tries (``choose(target:)``). The replica's own check (migration 0015) decides whether a
/// page may come from it; this decides whether it is worth asking.
///
/// A replica is in use while it is a standby (`pg_is_in_recovery()`), its WAL receiver
/// streams from the primary's timeline, and its replay is less than
/// ``ReplicaConfiguration/maximumLagBytes`` behind the primary. Anything else (a promoted
/// replica, a stopped or unreachable one, one following another timeline, replay paused far
/// behind) takes it out until an observation finds it right again.
package struct ReplicaStateMachine: Sendable {
    /// What one look at a replica found.
    package struct Observation: Equatable, Sendable {
        /// `pg_is_in_recovery()`: a standby. A promoted replica is not.
        package var inRecovery: Bool
        /// `pg_last_wal_replay_lsn()` in bytes; `nil` on a primary.
        package var replayed: Int64?
        /// `pg_stat_wal_receiver`'s `status`, `nil` without a receiver or without the right to
        /// see it (the role needs `pg_read_all_stats`, which `pg_monitor` includes).
        package var receiverStatus: String?
        /// The timeline the WAL receiver streams (`received_tli`).
        package var receiverTimeline: Int32?

        package init(inRecovery: Bool, replayed: Int64?, receiverStatus: String?, receiverTimeline: Int32?) {
            self.inRecovery = inRecovery
            self.replayed = replayed
            self.receiverStatus = receiverStatus
            self.receiverTimeline = receiverTimeline
        }
    }

    /// Why a replica serves no pages.
    package enum Reason: Equatable, Sendable, CustomStringConvertible {
        /// Not observed yet.
        case unobserved
        /// Not a standby: promoted, or a primary given as a replica.
        case notInRecovery
        /// No WAL receiver details: none runs, or the role may not see them.
        case noReceiver
        /// The receiver is not streaming (`status`).
        case notStreaming(String)
        /// It streams another timeline than the primary's (a replica left on a lost history).
        case otherTimeline(replica: Int32, primary: Int32)
        /// Its replay is this many bytes behind the primary's position.
        case lagging(bytes: Int64)
        /// It did not answer, or a read from it failed.
        case unreachable(String)

        package var description: String {
            switch self {
            case .unobserved: "not observed yet"
            case .notInRecovery: "not a standby (promoted?)"
            case .noReceiver:
                "no WAL receiver details (none runs, or the role lacks pg_read_all_stats: GRANT pg_monitor TO the server's role)"
            case .notStreaming(let status): "its WAL receiver is \(status), not streaming"
            case .otherTimeline(let replica, let primary): "it streams timeline \(replica), the primary is on \(primary)"
            case .lagging(let bytes): "its replay is \(bytes) bytes behind the primary"
            case .unreachable(let message): "unreachable: \(message)"
            }
        }
    }

    /// One replica's standing.
    package enum Standing: Equatable, Sendable {
        /// May serve pages; it had replayed this far when last observed.
        case inUse(replayed: Int64)
        case out(Reason)

        package var inUse: Bool {
            if case .inUse = self { return true }
            return false
        }
    }

    /// Why a look at a replica failed.
    package struct Failure: Error, Equatable, Sendable {
        var message: String
    }

    /// A replica went in or out of use: what the monitor logs.
    package struct Change: Equatable, Sendable {
        package var replica: Int
        package var standing: Standing

        package init(replica: Int, standing: Standing) {
            self.replica = replica
            self.standing = standing
        }
    }

    let maximumLagBytes: Int64
    package private(set) var standings: [Standing]
    /// The primary's timeline (0: not known, or a platform without WAL file names: not compared).
    private var primaryTimeline: Int32 = 0
    /// The primary's WAL position when last observed.
    private var primaryPosition: Int64 = 0
    /// What the last look at each replica found: `nil` before the first (and after a new
    /// primary timeline), a failure's message, or what it saw.
    private var observations: [Result<Observation, Failure>?]
    /// Where the next choice starts, so the replicas share the reads.
    private var rotation = 0
    /// Page reads that failed in a row, per replica (a page served resets it).
    private var readFailures: [Int]
    /// Looks a replica whose page read failed stays out for, whatever they find: 1 after one
    /// failure, twice as many after each further one in a row, at most 64, so a replica that
    /// answers looks but fails every read does not go in and out of use at every look.
    private var looksOut: [Int]

    package init(replicas: Int, maximumLagBytes: Int64) {
        self.maximumLagBytes = maximumLagBytes
        standings = Array(repeating: .out(.unobserved), count: replicas)
        observations = Array(repeating: nil, count: replicas)
        readFailures = Array(repeating: 0, count: replicas)
        looksOut = Array(repeating: 0, count: replicas)
    }

    /// The primary was observed: its timeline and WAL position. A new timeline (a failover)
    /// takes out every replica until an observation shows it streaming the new one.
    package mutating func primaryObserved(timeline: Int32, position: Int64) -> [Change] {
        guard timeline != primaryTimeline else {
            primaryPosition = max(primaryPosition, position)
            return reassess()
        }
        // The new primary's WAL goes on from where its timeline branched off: before the old one's end.
        (primaryTimeline, primaryPosition) = (timeline, position)
        observations = Array(repeating: nil, count: observations.count)
        return reassess()
    }

    /// A replica was observed.
    package mutating func observed(_ replica: Int, _ observation: Observation) -> Change? {
        guard looksOut[replica] == 0 else {
            looksOut[replica] -= 1
            return nil
        }
        observations[replica] = .success(observation)
        return settle(replica, standing(of: observations[replica]))
    }

    /// A look at a replica failed.
    package mutating func failed(_ replica: Int, _ message: String) -> Change? {
        observations[replica] = .failure(Failure(message: message))
        return settle(replica, standing(of: observations[replica]))
    }

    /// A page read from a replica failed (not for being behind: that is the page's own check,
    /// and the replica stays in use): it is out for the next looks (``looksOut``).
    package mutating func readFailed(_ replica: Int, _ message: String) -> Change? {
        readFailures[replica] += 1
        looksOut[replica] = 1 << min(readFailures[replica] - 1, 6)
        return failed(replica, message)
    }

    /// A replica served a page.
    package mutating func served(_ replica: Int) {
        readFailures[replica] = 0
    }

    /// The replica a page that needs the primary's WAL up to `target` on `timeline` tries
    /// first: one in use that had replayed that far on that timeline when last observed (or
    /// said so, ``ready(_:target:)``), else one in use at all (it may have replayed meanwhile;
    /// its check tells), taken in turn; `nil` when none is in use. `known` when the replica's
    /// replay was seen past the target already, so the page needs no check of its own.
    package mutating func choose(target: Int64, timeline: Int32) -> (replica: Int, known: Bool)? {
        let count = standings.count
        guard count > 0 else { return nil }
        var fallback: Int?
        for step in 0..<count {
            let index = (rotation + step) % count
            guard case .inUse(let replayed) = standings[index] else { continue }
            if replayed >= target {
                rotation = (index + 1) % count
                return (index, timeline == primaryTimeline)
            }
            if fallback == nil { fallback = index }
        }
        guard let fallback else { return nil }
        rotation = (fallback + 1) % count
        return (fallback, false)
    }

    /// A replica in use said it had replayed `target` on the primary's timeline: pages that
    /// need no more need not ask again, until a look or a read fails or the timeline changes.
    package mutating func ready(_ replica: Int, target: Int64) {
        guard case .inUse(let replayed) = standings[replica], replayed < target else { return }
        standings[replica] = .inUse(replayed: target)
    }

    private func standing(of look: Result<Observation, Failure>?) -> Standing {
        let observation: Observation
        switch look {
        case nil: return .out(.unobserved)
        case .failure(let failure): return .out(.unreachable(failure.message))
        case .success(let seen): observation = seen
        }
        guard observation.inRecovery, let replayed = observation.replayed else { return .out(.notInRecovery) }
        guard let status = observation.receiverStatus else { return .out(.noReceiver) }
        guard status == "streaming" else { return .out(.notStreaming(status)) }
        if primaryTimeline != 0, let timeline = observation.receiverTimeline, timeline != primaryTimeline {
            return .out(.otherTimeline(replica: timeline, primary: primaryTimeline))
        }
        if primaryPosition - replayed > maximumLagBytes { return .out(.lagging(bytes: primaryPosition - replayed)) }
        return .inUse(replayed: replayed)
    }

    private mutating func reassess() -> [Change] {
        standings.indices.compactMap { settle($0, standing(of: observations[$0])) }
    }

    /// Sets a replica's standing; the change when it went in or out of use, or out for
    /// another reason.
    private mutating func settle(_ replica: Int, _ standing: Standing) -> Change? {
        let old = standings[replica]
        standings[replica] = standing
        switch (old, standing) {
        case (.inUse, .inUse): return nil
        case (.out(let before), .out(let now)) where Self.sameKind(before, now): return nil
        default: return Change(replica: replica, standing: standing)
        }
    }

    /// Whether two reasons say the same to an operator (a lag's or a message's figures aside).
    private static func sameKind(_ a: Reason, _ b: Reason) -> Bool {
        switch (a, b) {
        case (.lagging, .lagging), (.unreachable, .unreachable): true
        default: a == b
        }
    }
}
