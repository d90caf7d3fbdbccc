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
}
