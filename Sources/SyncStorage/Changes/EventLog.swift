import Foundation
import Logging
import PartitionSync
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
package struct EventLog: Sendable {
    let store: ObjectStore
    var logger: Logger { store.logger }

    package init(store: ObjectStore) {
        self.store = store
    }

    /// Numbers the committed, unnumbered events (at most `limit` per pass); returns the new
    /// last position, or `nil` when there was nothing to number.
    @discardableResult
    package func sequence(limit: Int = 10_000) async throws -> Int64? {
        try await sequencePass(limit: limit)?.last
    }

    /// What one pass of the sequencer numbered.
    package struct Pass: Sendable {
        /// The new last position.
        package var last: Int64
        /// How many events it numbered.
        package var count: Int
        /// The kind, collection and operation of each numbered event, once each: which
        /// readers have something new.
        package var shapes: Set<ChangeEvent.Shape>
    }

    /// One pass of ``sequence(limit:)``, telling what it numbered; `nil` when nothing. One
    /// statement, its own transaction (`psync_sequence`, migration 0006).
    package func sequencePass(limit: Int = 10_000) async throws -> Pass? {
        let rows = try await store.client.fetch("SELECT * FROM psync_sequence(\(Int32(clamping: limit)))", logger: logger)
        var pass: Pass?
        for try await (last, kind, collection, operation) in rows.decode((Int64, String, String?, String).self) {
            let shape = ChangeEvent.Shape(kind: ChangeEvent.Kind(rawValue: kind) ?? .object, collection: collection, operation: .init(rawValue: operation))
            pass = Pass(last: last, count: (pass?.count ?? 0) + 1, shapes: (pass?.shapes ?? []).union([shape]))
        }
        if let pass { store.announce([ChangeNotification.sequenced(through: pass.last).payload]) }
        return pass
    }

    /// The last numbered position.
    package func head() async throws -> Int64 {
        for try await value in try await store.client.fetch("SELECT last_seq FROM psync_sequencer", logger: logger).decode(Int64.self) {
            return value
        }
        return 0
    }

    /// Numbered events after `position`, in order.
    package func events(after position: Int64, limit: Int) async throws -> [ChangeEvent] {
        try await events(after: position, limit: limit, on: nil)
    }

    /// The columns ``decode(_:)`` reads, in its order.
    private static let columns =
        "seq, kind, operation, collection, object_id, partition, version, user_id, before, after, changed, removed, author, depth, created_at"

    /// Numbered events after `position` that pass `filter`, in order, at most `limit`, found
    /// among the next `scan` numbered events, and with `bytes`, no more once their before and
    /// after images, as JSON text, reach it (one event at least); the position the reader
    /// may move to once it has handled them (every event up to it that passes the filter is in
    /// the result); and whether the read stopped at its limit of events or bytes (more may
    /// follow at once). Events that do not pass, or do not fit, are never decoded.
    ///
    /// With `images`, the images of updates and replaces leave out the fields the reader takes
    /// only when they change (``ChangeEvent/Images``): the database leaves them out, and the
    /// budget counts the images as read.
    package func events(
        after position: Int64, limit: Int, scan: Int, bytes: Int? = nil, filter: ChangeEvent.Filter, images: ChangeEvent.Images = .whole
    ) async throws -> (events: [ChangeEvent], through: Int64, full: Bool) {
        // One statement reads the head (its first row) and the events up to it (or the scan's
        // end), from one snapshot: every event it leaves out up to that end does not pass. Each
        // event's row also carries the bytes of the events before it in the read, and whether
        // it brings them to the budget.
        let bound = position + Int64(max(scan, limit))
        let columns = Self.columns.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        let budget = Int64(bytes ?? Int.max)
        // The sizes and their running sum only for a read with a budget (every trigger's): a
        // read of events one at a time needs neither. The images' size as text, as they arrive and are
        // parsed, not as stored: an image is compressed when stored, and a record listing 2,000
        // members (the same few fields each) takes a twentieth of its text, so a budget of stored
        // bytes let a run parse 2,000 images of 170 kB at once (3 GB as trees).
        // The size is the one the server recorded with the event (migration 0021), or, for an
        // event recorded without it, the images turned into text here.
        // The images as read: for updates and replaces, without the fields `images` names
        // that no changed or removed path starts with (``ChangeEvent/Images/leftOut(of:)`` is
        // the same choice in Swift); `dropped`, how many were left out.
        let leftOut = Array(images.withoutUnchanged)
        let asText = "coalesce(octet_length(before::text), 0) + coalesce(octet_length(after::text), 0)"
        let size = bytes == nil ? "0" : "CASE WHEN dropped = 0 THEN coalesce(image_bytes, \(asText)) ELSE \(asText) END"
        let read = bytes == nil ? "0" : "coalesce(sum(size) OVER (ORDER BY seq ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0)"
        let projected = Self.columns.replacingOccurrences(
            of: "before, after",
            with: """
                CASE WHEN cardinality(d.fields) = 0 THEN before ELSE before - d.fields END AS before,
                CASE WHEN cardinality(d.fields) = 0 THEN after ELSE after - d.fields END AS after
                """)
        let query: PostgresQuery = """
            SELECT LEAST(last_seq, \(bound)), false, \(unescaped: columns.map { _ in "NULL" }.joined(separator: ", ")) FROM psync_sequencer
            UNION ALL (
                SELECT NULL, read + size >= \(budget), \(unescaped: Self.columns)
                FROM (
                    SELECT \(unescaped: Self.columns), size, \(unescaped: read) AS read
                    FROM (
                        SELECT \(unescaped: Self.columns), \(unescaped: size) AS size
                        FROM (
                            SELECT \(unescaped: projected), image_bytes, cardinality(d.fields) AS dropped
                            FROM psync_events
                            CROSS JOIN LATERAL (
                                SELECT CASE WHEN cardinality(\(leftOut)::text[]) > 0 AND operation IN ('update', 'replace') THEN ARRAY(
                                    SELECT unnest(\(leftOut)::text[])
                                    EXCEPT SELECT split_part(path, '.', 1)
                                    FROM jsonb_array_elements_text(coalesce(changed, '[]') || coalesce(removed, '[]')) AS path)
                                ELSE '{}'::text[] END AS fields) AS d
                            WHERE seq > \(position) AND seq <= (SELECT LEAST(last_seq, \(bound)) FROM psync_sequencer)
                              AND kind = ANY(\(filter.kinds.map(\.rawValue))::text[])
                              AND (\(filter.collections == nil) OR collection = ANY(\(Array(filter.collections ?? []))::text[]))
                              AND (\(filter.operations == nil) OR operation = ANY(\((filter.operations ?? []).map(\.rawValue))::text[]))
                            ORDER BY seq LIMIT \(limit)) AS projected) AS candidates) AS sized
                WHERE read < \(budget)
                ORDER BY seq)
            """
        var end = position
        var reachedBudget = false
        let events = try decode(try await store.client.fetch(query, logger: logger).rows, boundColumn: true) { bound, atBudget in
            if let bound { end = max(end, bound) }
            reachedBudget = reachedBudget || atBudget
        }
        let full = events.count == limit || reachedBudget
        return (events, full ? events.last!.position : end, full)
    }

    /// The event at a position, if it exists.
    package func event(at position: Int64) async throws -> ChangeEvent? {
        try await events(after: position - 1, limit: 1).first.flatMap { $0.position == position ? $0 : nil }
    }

    func events(after position: Int64, limit: Int, on connection: PostgresConnection?) async throws -> [ChangeEvent] {
        let query: PostgresQuery = """
            SELECT \(unescaped: Self.columns)
            FROM psync_events WHERE seq > \(position) ORDER BY seq LIMIT \(limit)
            """
        if let connection {
            return try decode(try await connection.query(query, logger: logger).collect())
        } else {
            return try decode(try await store.client.fetch(query, logger: logger).rows)
        }
    }

    /// Decodes event rows; with `boundColumn`, each row starts with a bound and whether the
    /// read's budget was reached, handed to `bound`, and a row of the bound alone (no event)
    /// is skipped.
    private func decode(
        _ rows: [PostgresRow], boundColumn: Bool = false, bound: (Int64?, Bool) -> Void = { _, _ in }
    ) throws -> [ChangeEvent] {
        var events: [ChangeEvent] = []
        let o = boundColumn ? 2 : 0
        for row in rows {
            let columns = row.makeRandomAccess()
            if boundColumn {
                bound(try columns[0].decode(Int64?.self), try columns[1].decode(Bool.self))
                if try columns[2].decode(Int64?.self) == nil { continue }
            }
            let seq = try columns[o].decode(Int64.self)
            let kind = try columns[o + 1].decode(String.self)
            let operation = try columns[o + 2].decode(String.self)
            let collection = try columns[o + 3].decode(String?.self)
            let objectID = try columns[o + 4].decode(String?.self)
            let partition = try columns[o + 5].decode(String?.self)
            let version = try columns[o + 6].decode(Int64?.self)
            let userID = try columns[o + 7].decode(String?.self)
            let before = try columns[o + 8].decode(JSONB?.self)?.value.objectValue
            let after = try columns[o + 9].decode(JSONB?.self)?.value.objectValue
            let changed = try columns[o + 10].decode(JSONB?.self)?.value.arrayValue?.compactMap(\.stringValue) ?? []
            let removed = try columns[o + 11].decode(JSONB?.self)?.value.arrayValue?.compactMap(\.stringValue) ?? []
            let author = try columns[o + 12].decode(String.self)
            let depth = try columns[o + 13].decode(Int.self)
            let created = try columns[o + 14].decode(Date.self)
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
