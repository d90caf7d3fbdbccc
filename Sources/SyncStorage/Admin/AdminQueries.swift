import Foundation
import Logging
import PostgresNIO
import SyncProtocol

/// What the admin endpoints and the web console read: partitions with their size, a
/// partition's objects page by page, accounts with their presence, the instances. Reads only;
/// each a bounded query.
package struct AdminQueries: Sendable {
    let store: ObjectStore
    var client: PostgresClient { store.client }
    var logger: Logger { store.logger }

    package init(store: ObjectStore) {
        self.store = store
    }

    /// A partition as the console lists it.
    package struct PartitionSummary: Sendable, Hashable {
        package var partition: String
        package var version: Int64
        package var updated: Date
        /// Live objects.
        package var objects: Int64
        /// Bytes of their bodies as stored (jsonb, maybe compressed).
        package var bytes: Int64
    }

    /// The partitions whose name starts with `prefix` (`key=` or `key=value…`), in name order
    /// after `after`, at most `limit`.
    package func partitions(prefix: String, after: String?, limit: Int) async throws -> [PartitionSummary] {
        let rows = try await client.fetch(
            """
            SELECT p.partition, p.version, p.updated_at, coalesce(o.objects, 0), coalesce(o.bytes, 0)
            FROM psync_partitions p
            LEFT JOIN LATERAL (
                SELECT count(*) AS objects, sum(pg_column_size(body))::bigint AS bytes
                FROM psync_objects WHERE partition = p.partition AND body IS NOT NULL
            ) o ON true
            WHERE starts_with(p.partition, \(prefix)) AND p.partition > \(after ?? "")
            ORDER BY p.partition
            LIMIT \(limit)
            """, logger: logger)
        var found: [PartitionSummary] = []
        for try await (partition, version, updated, objects, bytes) in rows.decode((String, Int64, Date, Int64, Int64).self) {
            found.append(PartitionSummary(partition: partition, version: version, updated: updated, objects: objects, bytes: bytes))
        }
        return found
    }

    /// Live objects of a partition in (collection, id) order after `after`, of one collection
    /// when given; at most `limit`.
    package func objects(in partition: Partition, collection: String?, after: ObjectKey?, limit: Int) async throws -> [SyncObject] {
        let rows = try await client.fetch(
            """
            SELECT o.collection, o.id, \(unescaped: StoredBody.version()), \(unescaped: StoredBody.sql())::text
            FROM psync_objects o \(unescaped: StoredBody.join())
            WHERE o.partition = \(partition.description) AND o.body IS NOT NULL
              AND (\(collection)::text IS NULL OR o.collection = \(collection))
              AND (o.collection, o.id) > (\(after?.collection ?? ""), \(after?.id ?? ""))
            ORDER BY o.collection, o.id
            LIMIT \(limit)
            """, logger: logger)
        var objects: [SyncObject] = []
        for try await (collection, id, version, body) in rows.decode((String, String, Int64, String).self) {
            let parsed = try JSONParser(maximumDepth: 512).parse(body).objectValue
            objects.append(SyncObject(key: ObjectKey(uncheckedCollection: collection, id: id), version: version, body: parsed))
        }
        return objects
    }

    /// An account as the console lists it, with its open sessions on every instance.
    package struct UserSummary: Sendable, Hashable {
        package var id: String
        package var email: String
        package var created: Date
        /// Open sessions per instance (presence leases not yet expired).
        package var sessions: [String: Int]
    }

    /// The accounts whose email (lowercased) starts with `emailPrefix`, by email, at most `limit`.
    package func users(emailPrefix: String, limit: Int) async throws -> [UserSummary] {
        let rows = try await client.fetch(
            """
            SELECT u.id, u.email, u.created_at, coalesce(jsonb_object_agg(p.instance, p.sessions) FILTER (WHERE p.instance IS NOT NULL), '{}')::text
            FROM psync_users u
            LEFT JOIN psync_presence p ON p.user_id = u.id AND p.expires_at > now() AND p.sessions > 0
            WHERE starts_with(u.email_key, \(emailPrefix.lowercased()))
            GROUP BY u.id, u.email, u.created_at, u.email_key
            ORDER BY u.email_key
            LIMIT \(limit)
            """, logger: logger)
        var users: [UserSummary] = []
        for try await (id, email, created, sessions) in rows.decode((String, String, Date, String).self) {
            var counts: [String: Int] = [:]
            for (instance, value) in try JSONParser().parse(sessions).objectValue ?? [:] {
                counts[instance] = value.intValue.map(Int.init) ?? 0
            }
            users.append(UserSummary(id: id, email: email, created: created, sessions: counts))
        }
        return users
    }

    /// Users' open sessions on every instance (their presence leases not yet expired).
    package func openSessions() async throws -> Int {
        let rows = try await client.fetch(
            "SELECT coalesce(sum(sessions), 0)::bigint FROM psync_presence WHERE expires_at > now()", logger: logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }

    /// The server instances whose lease runs, with when it ends.
    package func instances() async throws -> [(name: String, expires: Date)] {
        let rows = try await client.fetch(
            "SELECT name, expires_at FROM psync_instances WHERE expires_at > now() ORDER BY name", logger: logger)
        var instances: [(name: String, expires: Date)] = []
        for try await (name, expires) in rows.decode((String, Date).self) { instances.append((name, expires)) }
        return instances
    }
}
