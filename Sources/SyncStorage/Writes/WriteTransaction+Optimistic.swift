import PostgresNIO
import SyncProtocol

extension WriteTransaction {
    /// Starts an optimistic transaction on a connection with no transaction open: the objects
    /// `keys` name are read without locks (or, `assumingAbsent`, taken to be stored nowhere,
    /// with no read at all), and the changes are then staged against them as usual, each of
    /// `partitions` carrying version 0 until ``commitOptimistically(lockTimeout:)`` locks it.
    /// That commit checks that every object read is still as it was, so the result is the one
    /// a locked transaction would have given, or nothing is written.
    func readOptimistically(_ partitions: [Partition], _ keys: [ObjectKey], assumingAbsent: Bool) async throws {
        precondition(versions.isEmpty && changeCount == 0, "an optimistic transaction starts empty")
        defersWrites = true
        for partition in partitions { versions[partition] = 0 }
        var expected: [ObjectKey: Int64] = [:]
        if assumingAbsent {
            for key in keys {
                known[key] = .some(nil)
                expected[key] = -1
            }
        } else if !keys.isEmpty {
            let rows = try await connection.execute(
                WriteStatements.Read(collections: keys.map(\.collection), ids: keys.map(\.id)), logger: logger)
            for try await (collection, id, partition, version, body) in rows {
                let key = ObjectKey(uncheckedCollection: collection, id: id)
                known[key] = (partition, body?.value.objectValue.map(DocumentState.live) ?? .deleted)
                expected[key] = version
            }
            for key in keys where expected[key] == nil {
                known[key] = .some(nil)
                expected[key] = -1
            }
        }
        self.expected = expected
    }

    /// Commits an optimistic transaction in one statement, which commits on its own
    /// (`psync_upload`, migration 0006): locks the partitions that were given, checks the
    /// objects read, and writes what is staged with the outcomes and the events, every change
    /// at its partition's new version. Throws ``OptimisticConflict`` when an object read
    /// changed meanwhile, an outcome's request id has one already, a key was created in
    /// another partition, or (with `lockTimeout`) a lock was not granted in time: then nothing
    /// was written, and the uploads must be applied again the careful way.
    func commitOptimistically(lockTimeout: Duration?) async throws {
        guard let expected else { preconditionFailure("not an optimistic transaction") }
        let pending = staged
        staged = []
        let (write, _) = try writeStatement(pending, finishing: true)
        largestStatement = max(largestStatement, write.bytes)
        var statement = WriteStatements.Upload(
            partitions: versions.keys.sorted().map(\.description),
            lockTimeoutMilliseconds: lockTimeout.map { Int32($0 / .milliseconds(1)) }, write: write)
        for (key, version) in expected {
            statement.expectedCollections.append(key.collection)
            statement.expectedIDs.append(key.id)
            statement.expectedVersions.append(version)
        }
        let byName = Dictionary(versions.keys.map { ($0.description, $0) }, uniquingKeysWith: { first, _ in first })
        var locked: [Partition: Int64] = [:]
        do {
            for try await (name, version) in try await connection.execute(statement, logger: logger) {
                locked[try byName[name] ?? Partition(name)] = version
            }
        } catch let error as PSQLError where error.serverInfo?[.sqlState].map(OptimisticConflict.states.contains) == true {
            throw OptimisticConflict()
        }
        guard locked.count == versions.count else {
            throw SyncError(.internal, "the optimistic commit locked \(locked.count) of \(versions.count) partitions")
        }
        versions = locked
        changes = changes.map { ($0.partition, locked[$0.partition] ?? $0.version, $0.change) }
        for (key, entry) in touched { touched[key]?.version = locked[entry.partition] ?? entry.version }
    }
}

/// An optimistic transaction could not commit as computed (see
/// ``WriteTransaction/commitOptimistically(lockTimeout:)``); nothing was written.
struct OptimisticConflict: Error {
    /// psync_upload's conflict, a lock not granted in time, a deadlock, a serialization failure.
    static let states: Set<String> = ["PS409", "55P03", "40P01", "40001"]
}
