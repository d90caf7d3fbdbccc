import SyncProtocol
import SyncStorage

func key(_ collection: String, _ id: String) -> ObjectKey { try! ObjectKey(collection: collection, id: id) }
func path(_ text: String) -> Path { try! Path(parsing: text) }
func partition(_ text: String) -> Partition { try! Partition(text) }

/// The code of the ``SyncError`` `body` throws; `nil` when it succeeds.
func errorCode<T>(_ body: () async throws -> T) async -> SyncError.Code? {
    do {
        _ = try await body()
        return nil
    } catch let error as SyncError {
        return error.code
    } catch {
        return SyncError.Code("unexpected: \(error)")
    }
}

extension ObjectStore {
    /// Applies operations as one upload without a request id.
    @discardableResult
    func apply(_ operations: [SyncOperation], in partition: Partition, principal: String = "tester") async throws -> UploadResult {
        try await upload(Upload(partition: partition, operations: operations, principal: principal))
    }

    /// The stored body of one object; `nil` for a tombstone or an absent key.
    func body(of key: ObjectKey) async throws -> [String: JSONValue]? {
        try await objects([key]).first?.object.body
    }

    /// Every object of a partition read by paging through a full snapshot.
    func snapshot(of partition: Partition, pageSize: Int = 500) async throws -> [ObjectKey: SyncObject] {
        var copy: [ObjectKey: SyncObject] = [:]
        for try await batch in changeFeed(in: partition, after: nil, limit: pageSize) {
            for object in batch.objects { copy[object.key] = object.isDeleted ? nil : object }
        }
        return copy
    }
}
