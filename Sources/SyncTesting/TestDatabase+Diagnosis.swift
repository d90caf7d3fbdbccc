import PostgresNIO
import SyncProtocol

extension TestDatabase {
    /// The database's side of a failed expectation about triggers, as text to print: the
    /// objects of `collection` (their partition, version and the `field` of their bodies), the
    /// latest change events, each trigger's position and lease, the sequencer, dead letters,
    /// and the partitions' versions and clocks.
    public func diagnosis(collection: String, field: String) async throws -> String {
        var lines: [String] = ["--- the database"]
        let queries: [PostgresQuery] = [
            """
            SELECT collection || '/' || id || ' ' || partition || ' v' || version || ' ' || coalesce((body->\(field))::text, '-')
            FROM psync_objects WHERE collection = \(collection) ORDER BY id
            """,
            """
            SELECT 'event ' || coalesce(seq::text, 'unnumbered') || ' ' || kind || ' ' || operation || ' ' || coalesce(collection, '')
                   || ' ' || coalesce(partition, '') || ' v' || coalesce(version::text, '-') || ' clock ' || clock || ' xid ' || xid::text
            FROM psync_events ORDER BY id DESC LIMIT 40
            """,
            "SELECT 'trigger ' || name || ' at ' || position || ' holder ' || coalesce(lease_holder, '-') FROM psync_triggers ORDER BY name",
            "SELECT 'sequencer at ' || last_seq FROM psync_sequencer",
            "SELECT 'dead letter ' || trigger || ' ' || seq || ' ' || error FROM psync_dead_letters",
            "SELECT 'partition ' || partition || ' v' || version || ' clock ' || clock FROM psync_partitions ORDER BY partition",
        ]
        for query in queries {
            for try await line in try await client.query(query, logger: logger).decode(String.self) { lines.append(line) }
        }
        return lines.joined(separator: "\n")
    }
}

extension TestDatabase {
    /// The one `bigint` a query of the test's own answers (counts of rows the engine keeps).
    package func scalar(_ sql: String) async throws -> Int64 {
        let rows = try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger)
        for try await value in rows.decode(Int64.self) { return value }
        throw SyncError(.internal, "no row: \(sql)")
    }
}

extension TestDatabase {
    /// The `text` of each row a query of the test's own answers, in order.
    package func rows(_ sql: String) async throws -> [String] {
        var values: [String] = []
        for try await value in try await client.query(PostgresQuery(unsafeSQL: sql), logger: logger).decode(String.self) { values.append(value) }
        return values
    }
}
