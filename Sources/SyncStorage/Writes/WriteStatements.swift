import PostgresNIO

/// The statements every write transaction runs, prepared once per connection: each upload
/// batch runs them, and parsing and planning them each time cost more than running them
/// (pgbench on the upload transaction: 1,808 tx/s unprepared, 2,236 prepared).
enum WriteStatements {
    /// `psync_lock_read_begun` (migration 0022, on `psync_lock_read` of 0006, 0014 and 0020):
    /// locks partitions, then reads objects; refuses to run outside a write transaction's
    /// ``WriteTransaction/begin``.
    struct LockAndRead: PostgresPreparedStatement {
        static let name = "psync_lock_read_3"
        static let sql = "SELECT * FROM psync_lock_read_begun($1, $2, $3, $4)"
        static let bindingDataTypes: [PostgresDataType] = [.textArray, .textArray, .textArray, .int4]
        typealias Row = (Int16, String, Int64, Int64?, String?, String?, JSONB?, Int32?)

        var partitions: [String]
        var collections: [String]
        var ids: [String]
        var lockTimeoutMilliseconds: Int32?

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(partitions)
            bindings.append(collections)
            bindings.append(ids)
            bindings.append(lockTimeoutMilliseconds)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode(Row.self)
        }
    }

    /// `psync_read_counters` (migrations 0018 and 0020): where each counter path leads in its object and
    /// the value there, without the bodies (``WriteTransaction/raise(_:)``).
    struct ReadCounters: PostgresPreparedStatement {
        static let name = "psync_read_counters_1"
        static let sql = "SELECT * FROM psync_read_counters($1, $2, $3, $4)"
        static let bindingDataTypes: [PostgresDataType] = [.textArray, .textArray, .textArray, .jsonbArray]
        /// The ordinal of the counter asked for (from 1), the object's partition, whether it is
        /// live, how many counters it keeps and whether this one is among them, where the path
        /// leads (`nil`: nowhere) and the value there (`nil`: no field yet).
        typealias Row = (Int64, String, Bool, Int32, Bool, [String]?, JSONB?)

        var collections: [String] = []
        var ids: [String] = []
        var paths: [String] = []
        var steps: [JSONB] = []

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 4)
            bindings.append(collections)
            bindings.append(ids)
            bindings.append(paths)
            bindings.append(steps)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode(Row.self)
        }
    }

    /// `psync_raise_counters` (migrations 0018 and 0020): objects' new versions and counters,
    /// in their rows of `psync_counters`, their bodies untouched. Returns how many objects it wrote.
    struct RaiseCounters: PostgresPreparedStatement {
        static let name = "psync_raise_counters_1"
        static let sql = "SELECT psync_raise_counters($1, $2, $3, $4, $5)"
        static let bindingDataTypes: [PostgresDataType] = [.textArray, .textArray, .textArray, .int8Array, .jsonbArray]
        typealias Row = Int64

        var collections: [String] = []
        var ids: [String] = []
        var partitions: [String] = []
        var versions: [Int64] = []
        /// Each object's raised counters: `{"<path>": [[<place>], <value>]}`.
        var entries: [JSONB] = []

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 5)
            bindings.append(collections)
            bindings.append(ids)
            bindings.append(partitions)
            bindings.append(versions)
            bindings.append(entries)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode(Row.self)
        }
    }

    /// `psync_insert_new` (migrations 0016 and 0017): the objects and clock stamp of a ``Write`` whose
    /// objects are all new (an import's batch whose keys were not read); fails with
    /// unique_violation on a key stored already. Nothing else of the ``Write`` is written.
    struct InsertNew: PostgresPreparedStatement {
        static let name = "psync_insert_new_2"
        static let sql = "SELECT * FROM psync_insert_new($1, $2, $3, $4, $5, $6, $7, $8)"
        static let bindingDataTypes: [PostgresDataType] = [.textArray, .textArray, .textArray, .int8Array, .jsonbArray, .int2Array, .textArray, .int8]
        typealias Row = (Int64, Int64)

        var write: Write

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 8)
            bindings.append(write.collections)
            bindings.append(write.ids)
            bindings.append(write.partitions)
            bindings.append(write.versions)
            bindings.append(write.bodies)
            bindings.append(write.marks)
            bindings.append(write.stamp)
            bindings.append(write.clock)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode(Row.self)
        }
    }

    /// `psync_write` (migrations 0006, 0017 and 0021): writes objects, stores outcomes, stamps
    /// clocks, records events with the sizes of their images.
    struct Write: PostgresPreparedStatement {
        static let name = "psync_write_3"
        static let sql = """
            SELECT * FROM psync_write($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)
            """
        static let bindingDataTypes: [PostgresDataType] = [
            .textArray, .textArray, .textArray, .int8Array, .jsonbArray, .boolArray, .int2Array,
            .textArray, .textArray, .textArray, .jsonbArray,
            .textArray, .int8,
            .textArray, .textArray, .textArray, .textArray, .textArray, .int8Array, .textArray,
            .jsonbArray, .jsonbArray, .jsonbArray, .jsonbArray, .int4Array, .textArray, .int4Array,
        ]
        typealias Row = (Int64, Int64)

        // Objects.
        var collections: [String] = []
        var ids: [String] = []
        var partitions: [String] = []
        var versions: [Int64] = []
        var bodies: [EncodedJSONB] = []
        var deleted: [Bool] = []
        /// ``BodyMarks`` of each body, -1 when unknown.
        var marks: [Int16] = []
        // Upload outcomes.
        var principals: [String] = []
        var requestIDs: [String] = []
        var outcomePartitions: [String] = []
        var outcomes: [JSONB] = []
        // The Lamport clock.
        var stamp: [String] = []
        var clock: Int64?
        // Events.
        var kinds: [String] = []
        var operations: [String] = []
        var eventCollections: [String] = []
        var objectIDs: [String] = []
        var eventPartitions: [String] = []
        var eventVersions: [Int64] = []
        var userIDs: [String] = []
        var before: [EncodedJSONB] = []
        var after: [EncodedJSONB] = []
        var changed: [JSONB] = []
        var removed: [JSONB] = []
        var depths: [Int32] = []
        var authors: [String] = []
        /// The bytes of each event's images as JSON text (0 for an absent one): what a
        /// trigger's read counts against its budget (migration 0021).
        var imageBytes: [Int32] = []

        func makeBindings() throws -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 27)
            append(to: &bindings)
            return bindings
        }

        /// Appends the 27 parameters, in the order of psync_write's.
        func append(to bindings: inout PostgresBindings) {
            bindings.append(collections)
            bindings.append(ids)
            bindings.append(partitions)
            bindings.append(versions)
            bindings.append(bodies)
            bindings.append(deleted)
            bindings.append(marks)
            bindings.append(principals)
            bindings.append(requestIDs)
            bindings.append(outcomePartitions)
            bindings.append(outcomes)
            bindings.append(stamp)
            bindings.append(clock)
            bindings.append(kinds)
            bindings.append(operations)
            bindings.append(eventCollections)
            bindings.append(objectIDs)
            bindings.append(eventPartitions)
            bindings.append(eventVersions)
            bindings.append(userIDs)
            bindings.append(before)
            bindings.append(after)
            bindings.append(changed)
            bindings.append(removed)
            bindings.append(depths)
            bindings.append(authors)
            bindings.append(imageBytes)
        }

        func decodeRow(_ row: PostgresRow) throws -> Row {
            try row.decode(Row.self)
        }

        /// About how many bytes its parameters take: the bodies, their keys and partitions, and
        /// the events' bodies before and after.
        var bytes: Int {
            var total = 0
            for index in ids.indices { total += objectBytes(index) }
            for index in kinds.indices { total += eventBytes(index) }
            return total
        }

        private func objectBytes(_ index: Int) -> Int {
            bodies[index].bytes.count + collections[index].utf8.count + ids[index].utf8.count + partitions[index].utf8.count + 16
        }

        private func eventBytes(_ index: Int) -> Int {
            before[index].bytes.count + after[index].bytes.count + objectIDs[index].utf8.count + eventPartitions[index].utf8.count + 64
        }

        /// The same writes as statements of about `maximumBytes` at most, run one after the
        /// other in the same transaction: the objects first and then the events, each in their
        /// order (an object or event larger than `maximumBytes` goes alone). The outcomes and
        /// the clock stamp go with the last part; every part carries the clock, which the events
        /// it records take. A statement's parameters stay in its connection's send buffer at
        /// their largest size for the connection's life, so one statement of a trigger that
        /// rewrote a thousand large records would keep hundreds of megabytes.
        /// Each part comes with its size (``bytes``), measured once.
        func split(maximumBytes: Int) -> [(statement: Write, bytes: Int)] {
            // Objects and then events as one sequence, cut where a part would pass the budget.
            let sizes = ids.indices.map(objectBytes) + kinds.indices.map(eventBytes)
            var starts = [0]
            var partSizes = [0]
            for (index, bytes) in sizes.enumerated() {
                if partSizes[partSizes.count - 1] > 0 && partSizes[partSizes.count - 1] + bytes > maximumBytes {
                    starts.append(index)
                    partSizes.append(0)
                }
                partSizes[partSizes.count - 1] += bytes
            }
            guard starts.count > 1 else { return [(self, partSizes[0])] }
            let objects = ids.count
            var parts = zip(starts, starts.dropFirst() + [sizes.count]).map { start, end in
                slice(objects: min(start, objects)..<min(end, objects), events: max(start - objects, 0)..<max(end - objects, 0))
            }
            parts[parts.count - 1].principals = principals
            parts[parts.count - 1].requestIDs = requestIDs
            parts[parts.count - 1].outcomePartitions = outcomePartitions
            parts[parts.count - 1].outcomes = outcomes
            parts[parts.count - 1].stamp = stamp
            return Array(zip(parts, partSizes))
        }

        /// The given objects and events, at this statement's clock, without outcomes or stamp.
        private func slice(objects: Range<Int>, events: Range<Int>) -> Write {
            var part = Write()
            part.collections = Array(collections[objects])
            part.ids = Array(ids[objects])
            part.partitions = Array(partitions[objects])
            part.versions = Array(versions[objects])
            part.bodies = Array(bodies[objects])
            part.deleted = Array(deleted[objects])
            part.marks = Array(marks[objects])
            part.clock = clock
            part.kinds = Array(kinds[events])
            part.operations = Array(operations[events])
            part.eventCollections = Array(eventCollections[events])
            part.objectIDs = Array(objectIDs[events])
            part.eventPartitions = Array(eventPartitions[events])
            part.eventVersions = Array(eventVersions[events])
            part.userIDs = Array(userIDs[events])
            part.before = Array(before[events])
            part.after = Array(after[events])
            part.changed = Array(changed[events])
            part.removed = Array(removed[events])
            part.depths = Array(depths[events])
            part.authors = Array(authors[events])
            part.imageBytes = Array(imageBytes[events])
            return part
        }
    }
}
