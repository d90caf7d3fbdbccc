import PartitionSync
import PostgresNIO
import SyncProtocol

/// A trigger's searches (``ObjectTransaction/find(_:)``): SQL the declared ``ObjectIndex``es
/// serve, and in a transaction that defers its writes, the transaction's own changes laid
/// over the database's answer.
extension WriteTransaction {
    package func find(_ search: ObjectSearch) async throws -> [(partition: Partition, object: SyncObject)] {
        try await find(search, bodies: true)
    }

    /// Where the objects ``find(_:)`` finds are, without reading their bodies: for a handler
    /// that only writes to them (a later ``apply(_:)`` reads each body once, after its
    /// partition is locked).
    package func keys(_ search: ObjectSearch) async throws -> [(partition: Partition, key: ObjectKey)] {
        try await find(search, bodies: false).map { ($0.partition, $0.object.key) }
    }

    /// ``keys(_:)`` of each search, in order. The searches one statement can answer together
    /// are: the element searches of one declared element index (a run's rooms), and the
    /// one-value field searches of one collection and path (a room's members by name, each
    /// name's answer apart). In a transaction that defers its writes, each value's answer then
    /// serves its search as if that search had been read alone (the transaction's own changes
    /// laid over it).
    package func keys(_ searches: [ObjectSearch]) async throws -> [[(partition: Partition, key: ObjectKey)]] {
        var groups: [SearchGroup: [ObjectSearch]] = [:]
        for search in searches {
            try search.check()
            guard let group = searchGroup(of: search) else { continue }
            if mode.defersWrites, record.searches[Search(search: search, bodies: false)] != nil { continue }
            groups[group, default: []].append(search)
        }
        var read: [ObjectSearch: [(partition: Partition, object: SyncObject)]] = [:]
        for (group, members) in groups where members.count > 1 {
            let distinct = Array(Set(members))
            let found = try await keys(of: distinct, in: group)
            for (search, answer) in zip(distinct, found) {
                if mode.defersWrites {
                    record.searches[Search(search: search, bodies: false)] = SearchAnswer(
                        found: Dictionary(answer.map { ($0.object.key, $0) }, uniquingKeysWith: { first, _ in first }), applied: 0)
                } else {
                    read[search] = answer.sorted { $0.object.key < $1.object.key }
                }
            }
        }
        var answers: [[(partition: Partition, key: ObjectKey)]] = []
        for search in searches {
            let found: [(partition: Partition, object: SyncObject)]
            if let known = read[search] { found = known } else { found = try await find(search, bodies: false) }
            answers.append(found.map { ($0.partition, $0.object.key) })
        }
        return answers
    }

    /// Searches one statement answers together, each for one value.
    enum SearchGroup: Hashable {
        /// Element searches a declared element index serves (by its name).
        case elements(index: String)
        /// One-value field searches of a collection and path.
        case field(collection: String, path: String)
    }

    /// The group `search` can be answered in, if any.
    private func searchGroup(of search: ObjectSearch) -> SearchGroup? {
        switch search.condition {
        case .elementField(let field, _):
            let index = ObjectIndex.arrayElements(collection: search.collection, path: search.path, field: field)
            return store.hasElementIndex(index.name) ? .elements(index: index.name) : nil
        case .field(let values):
            return values.count == 1 ? .field(collection: search.collection, path: search.path) : nil
        case .arrayContains:
            return nil
        }
    }

    /// The keys each of `searches` (all of `group`) finds in the database, by one statement:
    /// each value joined with what it finds, numbered by its place.
    private func keys(of searches: [ObjectSearch], in group: SearchGroup) async throws -> [[(partition: Partition, object: SyncObject)]] {
        var query: PostgresQuery
        switch group {
        case .elements(let index):
            let values = searches.map { search -> JSONValue in
                guard case .elementField(_, let value) = search.condition else { preconditionFailure() }
                return value
            }
            query = """
                SELECT w.n, o.collection, o.id, o.partition, \(unescaped: StoredBody.version())
                FROM jsonb_array_elements(\(JSONB(value: .array(values)))) WITH ORDINALITY AS w(value, n)
                JOIN psync_element_entries e ON e.index_name = \(index) AND e.value = w.value
                JOIN psync_objects o ON o.collection = e.collection AND o.id = e.id
                \(unescaped: StoredBody.join())
                WHERE o.body IS NOT NULL
                """
        case .field(let collection, let path):
            let values = searches.map { search -> String in
                guard case .field(let values) = search.condition, let value = values.first else { preconditionFailure() }
                return value
            }
            // The path as a literal (checked), so the expression is the declared index's.
            query = PostgresQuery(unsafeSQL: """
                SELECT w.n, o.collection, o.id, o.partition, \(StoredBody.version())
                FROM unnest($2::text[]) WITH ORDINALITY AS w(value, n)
                JOIN psync_objects o ON o.collection = $1 AND o.body IS NOT NULL AND o.body #>> \(ObjectIndex.literal(path)) = w.value
                \(StoredBody.join())
                """)
            query.binds.append(collection, context: .default)
            query.binds.append(values, context: .default)
        }
        let rows = try await connection.query(query, logger: logger)
        var found = Array(repeating: [(partition: Partition, object: SyncObject)](), count: searches.count)
        for try await (n, collection, id, partition, version) in rows.decode((Int64, String, String, String, Int64).self) {
            let object = SyncObject(key: ObjectKey(uncheckedCollection: collection, id: id), version: version, body: nil)
            found[Int(n) - 1].append((try Partition(partition), object))
        }
        return found
    }

    private func find(_ search: ObjectSearch, bodies: Bool) async throws -> [(partition: Partition, object: SyncObject)] {
        try search.check()
        let (collection, path) = (search.collection, search.path)
        let selected = bodies ? StoredBody.sql() : "NULL::jsonb"
        let version = StoredBody.version()
        let from = "psync_objects o \(StoredBody.join())"
        // The path is spliced as a literal (it is checked above) so the expression matches a
        // declared index; the values are bound.
        var query: PostgresQuery
        switch search.condition {
        case .field(let values):
            query = PostgresQuery(unsafeSQL: """
                SELECT o.collection, o.id, o.partition, \(version), \(selected) FROM \(from)
                WHERE o.collection = $1 AND o.body IS NOT NULL AND o.body #>> \(ObjectIndex.literal(path)) = ANY($2)
                """)
            query.binds.append(collection, context: .default)
            query.binds.append(values.sorted(), context: .default)
        case .arrayContains(let element):
            query = PostgresQuery(unsafeSQL: """
                SELECT o.collection, o.id, o.partition, \(version), \(selected) FROM \(from)
                WHERE o.collection = $1 AND o.body IS NOT NULL AND (o.body #> \(ObjectIndex.literal(path))) @> $2
                """)
            query.binds.append(collection, context: .default)
            query.binds.append(JSONB(value: .array([element])), context: .default)
        case .elementField(let field, let value):
            // A search no index could serve (its name would be too long) scans.
            let index = ObjectIndex.arrayElements(collection: collection, path: path, field: field)
            if store.hasElementIndex(index.name) {
                // The index's live entries of the value, then each object by its key.
                query = PostgresQuery(unsafeSQL: """
                    SELECT o.collection, o.id, o.partition, \(version), \(selected)
                    FROM psync_element_entries e JOIN psync_objects o ON o.collection = e.collection AND o.id = e.id
                    \(StoredBody.join())
                    WHERE e.index_name = $1 AND e.value = $2 AND o.body IS NOT NULL
                    """)
                query.binds.append(index.name, context: .default)
                query.binds.append(JSONB(value: value), context: .default)
            } else {
                query = PostgresQuery(unsafeSQL: """
                    SELECT o.collection, o.id, o.partition, \(version), \(selected) FROM \(from)
                    WHERE o.collection = $1 AND o.body IS NOT NULL AND \(ObjectIndex.elementsExpression(path: path, field: field, of: "o.body")) @> $2
                    """)
                query.binds.append(collection, context: .default)
                query.binds.append(JSONB(value: .array([value])), context: .default)
            }
        }
        return try await self.search(Search(search: search, bodies: bodies), query)
    }

    /// A search, and whether its answer holds the bodies or only where the objects are.
    struct Search: Hashable {
        let search: ObjectSearch
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
    private func search(_ search: Search, _ query: PostgresQuery) async throws -> [(partition: Partition, object: SyncObject)] {
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
            for key in Set(record.touchLog[answer.applied...]) where key.collection == search.search.collection {
                let entry = record.touched[key]!
                if let body = entry.state.body, search.search.matches(body) {
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
