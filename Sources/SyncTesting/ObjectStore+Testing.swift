import SyncProtocol
import SyncStorage

extension ObjectStore {
    /// The stored body of one object; `nil` for a tombstone or an absent key.
    package func body(of key: ObjectKey) async throws -> [String: JSONValue]? {
        try await objects([key]).first?.object.body
    }

    /// Every live object of a partition, read by paging through a full snapshot.
    package func snapshot(of partition: Partition, pageSize: Int = 500) async throws -> [ObjectKey: SyncObject] {
        var copy: [ObjectKey: SyncObject] = [:]
        for try await batch in changeFeed(in: partition, after: nil, limit: pageSize) {
            for object in batch.objects { copy[object.key] = object.isDeleted ? nil : object }
        }
        return copy
    }
}
