import SyncProtocol

/// A client's copy of one partition, built from the change batches it receives, as a real
/// client keeps it: a reset drops the copy, tombstones remove objects, the cursor advances.
public struct PartitionCopy: Sendable, Equatable {
    public var objects: [ObjectKey: SyncObject] = [:]
    public var cursor: Cursor?
    public var upToDate = false

    public init() {}

    /// Applies a batch.
    public mutating func apply(_ batch: ChangeBatch) {
        if batch.reset { objects.removeAll() }
        for object in batch.objects {
            objects[object.key] = object.isDeleted ? nil : object
        }
        cursor = batch.cursor
        upToDate = batch.upToDate
    }

    /// The live bodies by key, for comparing with the database.
    public var bodies: [ObjectKey: [String: JSONValue]] {
        objects.compactMapValues(\.body)
    }
}

extension TestSyncClient {
    /// Applies the batches of `partition` to `copy` until one is up to date; returns the other
    /// messages that arrived meanwhile.
    @discardableResult
    public func sync(_ partition: Partition, into copy: inout PartitionCopy, timeout: Duration = .seconds(15)) async throws -> [ServerMessage] {
        var others: [ServerMessage] = []
        let deadline = ContinuousClock.now + timeout
        while true {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw TestTimeout(what: "\(partition) to be up to date") }
            let message = try await next(timeout: remaining)
            if case .changes(let batch) = message, batch.partition == partition {
                copy.apply(batch)
                if batch.upToDate { return others }
            } else {
                others.append(message)
            }
        }
    }
}

extension TestSyncClient {
    /// Applies batches of `partition` to `copy` until `condition` holds (checked after each
    /// batch and at once); other messages are returned.
    @discardableResult
    public func sync(
        _ partition: Partition, into copy: inout PartitionCopy, timeout: Duration = .seconds(20), until condition: (PartitionCopy) -> Bool
    ) async throws -> [ServerMessage] {
        var others: [ServerMessage] = []
        let deadline = ContinuousClock.now + timeout
        while !condition(copy) {
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else { throw TestTimeout(what: "a condition on \(partition)") }
            let message = try await next(timeout: remaining)
            if case .changes(let batch) = message, batch.partition == partition {
                copy.apply(batch)
            } else {
                others.append(message)
            }
        }
        return others
    }
}
