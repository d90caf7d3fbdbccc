import Locking
import NIOCore
import PostgresNIO
import Synchronization

/// Watches a read on a replica's connection, and closes the connection when the read makes
/// no progress (no statement answered, no row taken) for `patience`: a replica frozen since it
/// was last seen never answers, and its connection stays open, so the read would wait for
/// ever. Closed, the read fails at once, and the page is read from the primary.
final class ReplicaReadWatch: Sendable {
    private struct State {
        var entry: DeadlineTicker.Entry?
        var seen = 0
        var stopped = false
    }

    private let connection: PostgresConnection
    private let patience: Duration
    private let ticker: DeadlineTicker
    private let answers = Atomic<Int>(0)
    private let rows = Atomic<Int>(0)
    private let state = Locked(State())

    init(_ connection: PostgresConnection, patience: Duration, ticker: DeadlineTicker = .shared) {
        self.connection = connection
        self.patience = patience
        self.ticker = ticker
        arm()
    }

    /// A statement was answered.
    func answered() {
        answers.add(1, ordering: .relaxed)
    }

    /// A row was taken and handed over to the reader's caller.
    func took() {
        rows.add(1, ordering: .relaxed)
    }

    /// Some of the read was handed over: it cannot be read again elsewhere without the caller
    /// knowing.
    var handed: Bool { rows.load(ordering: .relaxed) > 0 }

    /// The read ended: the connection is left alone.
    func stop() {
        let entry = state.withLock { state in
            state.stopped = true
            defer { state.entry = nil }
            return state.entry
        }
        if let entry { ticker.cancel(entry) }
    }

    private var progress: Int { answers.load(ordering: .relaxed) + rows.load(ordering: .relaxed) }

    private func arm() {
        let entry = ticker.schedule(after: patience) { [self] in look() }
        let stopped = state.withLock { state in
            if !state.stopped { state.entry = entry }
            return state.stopped
        }
        if stopped { ticker.cancel(entry) }
    }

    private func look() {
        let now = progress
        let stalled = state.withLock { state -> Bool? in
            guard !state.stopped else { return nil }
            if now == state.seen {
                state.stopped = true
                return true
            }
            state.seen = now
            return false
        }
        switch stalled {
        case true?: _ = connection.close() as EventLoopFuture<Void>
        case false?: arm()
        case nil: break
        }
    }
}
