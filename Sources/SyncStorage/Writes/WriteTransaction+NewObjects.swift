import PostgresNIO
import SyncProtocol

extension WriteTransaction {
    /// An object checked for ``insertNew(_:)``: its change (created, encoded) and its body's marks.
    struct NewRow {
        var partition: Partition
        var change: ObjectChange
        var marks: BodyMarks?
    }

    /// Inserts new objects of locked partitions (an import's batch, each checked by its caller)
    /// by `psync_insert_new` (migrations 0016 and 0017), which also stamps the changed
    /// partitions with the transaction's clock: rows without the `ON CONFLICT` clause, nothing
    /// staged, no event (the transaction records none), and the record keeps nothing of them
    /// (``WriteRecord/insertedNew(_:in:keeping:)``). A key stored already fails the statement
    /// with unique_violation (23505), and the transaction must be rolled back. Nothing else may
    /// be written in the transaction.
    func insertNew(_ rows: [NewRow]) async throws {
        guard !rows.isEmpty else { return }
        guard record.staged.isEmpty, record.changes.isEmpty, record.events.isEmpty, record.outcomes.isEmpty else {
            throw SyncError(.internal, "a transaction that inserts new objects wrote something else")
        }
        var statement = WriteStatements.Write()
        statement.collections.reserveCapacity(rows.count)
        statement.ids.reserveCapacity(rows.count)
        statement.partitions.reserveCapacity(rows.count)
        statement.versions.reserveCapacity(rows.count)
        statement.bodies.reserveCapacity(rows.count)
        statement.marks.reserveCapacity(rows.count)
        let screen = store.releasedChangeScreen
        var bytes = 0
        for row in rows {
            guard let body = row.change.encodedBody, let version = record.versions[row.partition] else {
                throw SyncError(.internal, "\(row.change.key) is not encoded, or its partition is not locked")
            }
            record.insertedNew(row.change, in: row.partition, keeping: screen)
            statement.collections.append(row.change.key.collection)
            statement.ids.append(row.change.key.id)
            statement.partitions.append(row.partition.description)
            statement.versions.append(version)
            statement.bodies.append(EncodedJSONB(bytes: body))
            statement.marks.append(row.marks?.rawValue ?? -1)
            bytes += body.count
        }
        let (stamp, clock) = record.clockStamp
        statement.stamp = stamp.map(\.description)
        statement.clock = clock
        bodyBytesWritten += bytes
        var written = 0
        for (part, partBytes) in statement.split(maximumBytes: store.configuration.statementBytes) {
            largestStatement = max(largestStatement, partBytes)
            for try await (count, _) in try await connection.execute(WriteStatements.InsertNew(write: part), logger: logger) {
                written += Int(count)
            }
        }
        guard written == rows.count else {
            throw SyncError(.internal, "inserted \(written) new objects instead of \(rows.count)")
        }
        record.stamped(stamp, clock: clock)
    }
}
