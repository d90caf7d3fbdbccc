import PostgresNIO
import SyncProtocol

extension WriteTransaction {
    /// The live objects of a collection whose field at `path` (a dot-separated path of
    /// object fields) is one of `values` (compared as text), in every partition. Declare an
    /// ``ObjectIndex/field(collection:path:)`` for it, or it scans the collection.
    package func find(_ collection: String, where path: String, in values: [String]) async throws -> [(partition: Partition, object: SyncObject)] {
        try ObjectIndex.checkPath(path)
        // The path is spliced as a literal (it is checked above) so the expression matches a
        // declared index; the values are bound.
        var query = PostgresQuery(unsafeSQL: """
            SELECT collection, id, partition, version, body FROM psync_objects
            WHERE collection = $1 AND body IS NOT NULL AND body #>> \(ObjectIndex.literal(path)) = ANY($2)
            """)
        query.binds.append(collection, context: .default)
        query.binds.append(values, context: .default)
        return try await search(Search(collection: collection, predicate: BodyPredicate(path: path, condition: .field(Set(values)))), query)
    }

    /// The live objects of a collection whose array at `path` holds an element containing
    /// `element` (JSON containment), in every partition. Declare an
    /// ``ObjectIndex/arrayContains(collection:path:)`` for it, or it scans the collection.
    package func find(_ collection: String, whereArray path: String, contains element: JSONValue) async throws -> [(partition: Partition, object: SyncObject)] {
        try await find(collection, whereArray: path, contains: element, bodies: true)
    }

    /// Where the objects ``find(_:whereArray:contains:)`` finds are, without reading their
    /// bodies: for a handler that only writes to them (a later ``apply(_:)`` reads each body
    /// once, after its partition is locked).
    package func keys(of collection: String, whereArray path: String, contains element: JSONValue) async throws -> [(partition: Partition, key: ObjectKey)] {
        try await find(collection, whereArray: path, contains: element, bodies: false).map { ($0.partition, $0.object.key) }
    }

    /// The live objects of a collection whose array at `path` has an element whose `field` is
    /// `value` (for an array of objects: `User` whose `conversations` include one with `id`
    /// c), in every partition. Declare an ``ObjectIndex/arrayElements(collection:path:field:)``
    /// for it, or it scans the collection.
    package func find(_ collection: String, whereArray path: String, field: String, is value: JSONValue) async throws -> [(partition: Partition, object: SyncObject)] {
        try await find(collection, whereArray: path, field: field, is: value, bodies: true)
    }

    /// Where the objects ``find(_:whereArray:field:is:)`` finds are, without reading their
    /// bodies: for a handler that only writes to them.
    package func keys(of collection: String, whereArray path: String, field: String, is value: JSONValue) async throws -> [(partition: Partition, key: ObjectKey)] {
        try await find(collection, whereArray: path, field: field, is: value, bodies: false).map { ($0.partition, $0.object.key) }
    }

    private func find(_ collection: String, whereArray path: String, field: String, is value: JSONValue, bodies: Bool) async throws -> [(partition: Partition, object: SyncObject)] {
        try ObjectIndex.checkPath(path)
        try ObjectIndex.checkPath(field)
        var query: PostgresQuery
        // A search no index could serve (its name would be too long) scans.
        if let index = try? ObjectIndex.arrayElements(collection: collection, path: path, field: field), store.hasElementIndex(index.name) {
            // The index's live entries of the value, then each object by its key.
            query = PostgresQuery(unsafeSQL: """
                SELECT o.collection, o.id, o.partition, o.version, \(bodies ? "o.body" : "NULL::jsonb")
                FROM psync_element_entries e JOIN psync_objects o ON o.collection = e.collection AND o.id = e.id
                WHERE e.index_name = $1 AND e.value = $2 AND o.body IS NOT NULL
                """)
            query.binds.append(index.name, context: .default)
            query.binds.append(JSONB(value: value), context: .default)
        } else {
            query = PostgresQuery(unsafeSQL: """
                SELECT collection, id, partition, version, \(bodies ? "body" : "NULL::jsonb") FROM psync_objects
                WHERE collection = $1 AND body IS NOT NULL AND \(ObjectIndex.elementsExpression(path: path, field: field)) @> $2
                """)
            query.binds.append(collection, context: .default)
            query.binds.append(JSONB(value: .array([value])), context: .default)
        }
        let predicate = BodyPredicate(path: path, condition: .elementField(field, value))
        return try await search(Search(collection: collection, predicate: predicate, bodies: bodies), query)
    }

    private func find(_ collection: String, whereArray path: String, contains element: JSONValue, bodies: Bool) async throws -> [(partition: Partition, object: SyncObject)] {
        try ObjectIndex.checkPath(path)
        var query = PostgresQuery(unsafeSQL: """
            SELECT collection, id, partition, version, \(bodies ? "body" : "NULL::jsonb") FROM psync_objects
            WHERE collection = $1 AND body IS NOT NULL AND (body #> \(ObjectIndex.literal(path))) @> $2
            """)
        query.binds.append(collection, context: .default)
        query.binds.append(JSONB(value: .array([element])), context: .default)
        let predicate = BodyPredicate(path: path, condition: .arrayContains(element))
        return try await search(Search(collection: collection, predicate: predicate, bodies: bodies), query)
    }

    /// A search of a collection's bodies.
    struct Search: Hashable {
        let collection: String
        let predicate: BodyPredicate
        /// Whether the answer holds the bodies, or only where the objects are.
        var bodies = true
    }

    /// A search's answer in a transaction that defers its writes: the database's answer with
    /// the transaction's changes up to `applied` (an index of ``touchLog``) laid over it.
    struct SearchAnswer {
        var found: [ObjectKey: (partition: Partition, object: SyncObject)]
        var applied: Int
        var sorted: [(partition: Partition, object: SyncObject)]?
    }

    /// Runs a search; in a deferring ``mode``, once per transaction, with this transaction's own
    /// changes laid over the database's answer (ordered by key).
    func search(_ search: Search, _ query: PostgresQuery) async throws -> [(partition: Partition, object: SyncObject)] {
        guard mode.defersWrites else { return try await Self.objects(try await connection.query(query, logger: logger)) }
        var answer: SearchAnswer
        if let known = record.searches[search] {
            answer = known
        } else {
            var found: [ObjectKey: (partition: Partition, object: SyncObject)] = [:]
            for entry in try await Self.objects(try await connection.query(query, logger: logger)) {
                found[entry.object.key] = entry
            }
            // The database does not see the staged changes: all of them are laid over it.
            answer = SearchAnswer(found: found, applied: 0)
        }
        if answer.applied < record.touchLog.count {
            for key in Set(record.touchLog[answer.applied...]) where key.collection == search.collection {
                let entry = record.touched[key]!
                if let body = entry.state.body, search.predicate.matches(body) {
                    answer.found[key] = (entry.partition, SyncObject(key: key, version: entry.version, body: body))
                } else {
                    answer.found[key] = nil
                }
            }
            answer.applied = record.touchLog.count
            answer.sorted = nil
        }
        let sorted = answer.sorted ?? answer.found.values.sorted { $0.object.key < $1.object.key }
        answer.sorted = sorted
        record.searches[search] = answer
        return sorted
    }

    private static func objects(_ rows: PostgresRowSequence) async throws -> [(partition: Partition, object: SyncObject)] {
        var result: [(partition: Partition, object: SyncObject)] = []
        for try await (collection, id, partition, version, body) in rows.decode((String, String, String, Int64, JSONB?).self) {
            let object = SyncObject(key: ObjectKey(uncheckedCollection: collection, id: id), version: version, body: body?.value.objectValue)
            result.append((try Partition(partition), object))
        }
        return result
    }
}
