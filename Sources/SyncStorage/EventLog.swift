import Foundation
import Logging
import PostgresNIO
import SyncProtocol

/// The change events of the database, numbered and read in order.
///
/// Transactions record events unnumbered; the sequencer numbers the committed ones, pass by
/// pass. Passes lock one row, so they run one at a time across all server instances. A pass
/// sees every transaction committed before it began, and each transaction's conflicting
/// predecessors committed before it; within a pass, events are ordered by the Lamport clock of
/// their transaction, which follows the commit order of transactions that touched a common
/// partition. So numbers are gapless, and two changes of one partition are numbered in the
/// order they committed. (docs/TRIGGERS.md, "Ordering".)
public struct EventLog: Sendable {
    let store: ObjectStore
    var logger: Logger { store.logger }

    public init(store: ObjectStore) {
        self.store = store
    }

    /// Numbers the committed, unnumbered events (at most `limit` per pass); returns the new
    /// last position, or `nil` when there was nothing to number.
    @discardableResult
    public func sequence(limit: Int = 10_000) async throws -> Int64? {
        try await store.client.withConnection { connection in
            let last = try await sequence(limit: limit, on: connection)
            if let last { await store.announce(["seq:\(last)"], on: connection) }
            return last
        }
    }

    private func sequence(limit: Int, on connection: PostgresConnection) async throws -> Int64? {
        try await connection.withTransaction(logger: logger) { connection in
            var last: Int64 = 0
            for try await value in try await connection.query(
                "SELECT last_seq FROM psync_sequencer FOR UPDATE", logger: logger
            ).decode(Int64.self) { last = value }
            // A new statement: its snapshot includes everything committed while we waited.
            let rows = try await connection.query(
                """
                WITH next AS (
                    SELECT id, row_number() OVER (ORDER BY clock, xid, id) AS n
                    FROM (SELECT id, clock, xid FROM psync_events WHERE seq IS NULL ORDER BY clock, xid, id LIMIT \(limit)) AS pending
                )
                UPDATE psync_events e SET seq = \(last) + next.n FROM next WHERE e.id = next.id
                RETURNING e.seq
                """, logger: logger)
            var count: Int64 = 0
            for try await _ in rows { count += 1 }
            guard count > 0 else { return nil }
            try await connection.query(
                "UPDATE psync_sequencer SET last_seq = \(last + count)", logger: logger)
            return last + count
        }
    }

    /// The last numbered position.
    public func head() async throws -> Int64 {
        for try await value in try await store.client.query("SELECT last_seq FROM psync_sequencer", logger: logger).decode(Int64.self) {
            return value
        }
        return 0
    }

    /// Numbered events after `position`, in order.
    public func events(after position: Int64, limit: Int) async throws -> [ChangeEvent] {
        try await events(after: position, limit: limit, on: nil)
    }

    /// Which events a reader wants: by kind, and optionally by collection and operation.
    public struct Filter: Sendable, Hashable {
        public var kinds: Set<ChangeEvent.Kind>
        /// `nil`: every collection (and events without one).
        public var collections: Set<String>?
        /// `nil`: every operation.
        public var operations: Set<ChangeEvent.Operation>?

        public init(kinds: Set<ChangeEvent.Kind>, collections: Set<String>? = nil, operations: Set<ChangeEvent.Operation>? = nil) {
            self.kinds = kinds
            self.collections = collections
            self.operations = operations
        }

        /// Whether `event` passes: the same test the SQL of
        /// ``EventLog/events(after:limit:scan:filter:)`` makes.
        public func passes(_ event: ChangeEvent) -> Bool {
            guard kinds.contains(event.kind) else { return false }
            if let collections, !collections.contains(event.collection ?? "") { return false }
            if let operations, !operations.contains(event.operation) { return false }
            return true
        }
    }

    /// The columns ``decode(_:)`` reads, in its order.
    private static let columns =
        "seq, kind, operation, collection, object_id, partition, version, user_id, before, after, changed, removed, author, depth, created_at"

    /// Numbered events after `position` that pass `filter`, in order, at most `limit`, found
    /// among the next `scan` numbered events; and the position the reader may move to once it
    /// has handled them (every event up to it that passes the filter is in the result). Events
    /// that do not pass are never decoded.
    public func events(after position: Int64, limit: Int, scan: Int, filter: Filter) async throws -> (events: [ChangeEvent], through: Int64) {
        let end = min(try await head(), position + Int64(max(scan, limit)))
        guard end > position else { return ([], position) }
        let query: PostgresQuery = """
            SELECT \(unescaped: Self.columns)
            FROM psync_events
            WHERE seq > \(position) AND seq <= \(end) AND kind = ANY(\(filter.kinds.map(\.rawValue))::text[])
              AND (\(filter.collections == nil) OR collection = ANY(\(Array(filter.collections ?? []))::text[]))
              AND (\(filter.operations == nil) OR operation = ANY(\((filter.operations ?? []).map(\.rawValue))::text[]))
            ORDER BY seq LIMIT \(limit)
            """
        let events = try await decode(try await store.client.query(query, logger: logger))
        return (events, events.count == limit ? events.last!.position : end)
    }

    /// The event at a position, if it exists.
    public func event(at position: Int64) async throws -> ChangeEvent? {
        try await events(after: position - 1, limit: 1).first.flatMap { $0.position == position ? $0 : nil }
    }

    func events(after position: Int64, limit: Int, on connection: PostgresConnection?) async throws -> [ChangeEvent] {
        let query: PostgresQuery = """
            SELECT \(unescaped: Self.columns)
            FROM psync_events WHERE seq > \(position) ORDER BY seq LIMIT \(limit)
            """
        if let connection {
            return try await decode(try await connection.query(query, logger: logger))
        } else {
            return try await decode(try await store.client.query(query, logger: logger))
        }
    }

    private func decode(_ rows: PostgresRowSequence) async throws -> [ChangeEvent] {
        var events: [ChangeEvent] = []
        for try await row in rows {
            let (seq, kind, operation, collection, objectID, partition, version, userID) =
                try row.decode((Int64, String, String, String?, String?, String?, Int64?, String?).self)
            let columns = row.makeRandomAccess()
            let before = try columns[8].decode(JSONB?.self)?.value.objectValue
            let after = try columns[9].decode(JSONB?.self)?.value.objectValue
            let changed = try columns[10].decode(JSONB?.self)?.value.arrayValue?.compactMap(\.stringValue) ?? []
            let removed = try columns[11].decode(JSONB?.self)?.value.arrayValue?.compactMap(\.stringValue) ?? []
            let author = try columns[12].decode(String.self)
            let depth = try columns[13].decode(Int.self)
            let created = try columns[14].decode(Date.self)
            var key: ObjectKey?
            if let collection, let objectID { key = ObjectKey(uncheckedCollection: collection, id: objectID) }
            events.append(ChangeEvent(
                position: seq, kind: ChangeEvent.Kind(rawValue: kind) ?? .object, operation: .init(rawValue: operation),
                key: key, partition: try partition.map { text throws in try Partition(text) }, version: version, userID: userID,
                before: before, after: after, changedFields: changed, removedFields: removed, author: author, depth: depth,
                created: created))
        }
        return events
    }
}
