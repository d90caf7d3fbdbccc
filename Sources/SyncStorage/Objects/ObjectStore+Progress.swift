import PostgresNIO
import SyncProtocol

extension ObjectStore {
    /// How many objects a reader at `position` (where a page ends) has still to receive
    /// before it is up to date, as of now: the objects after its position, without the
    /// tombstones a snapshot leaves out (at or below its floor). One index range scan of the
    /// partition's rest, which is why sessions count only when a subscription asks for progress.
    package func remainingObjects(in partition: Partition, after position: CursorPosition) async throws -> Int {
        let floor = position.tombstoneFloor ?? 0
        let query: PostgresQuery
        if let after = position.after {
            query = """
                SELECT count(*) FROM psync_objects
                WHERE partition = \(partition.description) AND (version, collection, id) > (\(position.version), \(after.collection), \(after.id))
                  AND (body IS NOT NULL OR version > \(floor))
                """
        } else {
            query = """
                SELECT count(*) FROM psync_objects
                WHERE partition = \(partition.description) AND version > \(position.version) AND (body IS NOT NULL OR version > \(floor))
                """
        }
        for try await count in try await client.fetch(query, logger: logger).decode(Int64.self) { return Int(count) }
        return 0
    }
}
