import SyncProtocol
import SyncStorage

/// The committed objects and accounts of the engine's store: what permission rules read.
struct StoreObjectSource: ObjectSource {
    let store: ObjectStore

    func liveObjects(_ keys: [ObjectKey]) async throws -> [(partition: Partition, object: SyncObject)] {
        try await store.objects(keys).compactMap { partition, object in
            guard !object.isDeleted, let partition = try? Partition(partition) else { return nil }
            return (partition, object)
        }
    }

    func email(ofUser userID: String) async throws -> String? {
        try await AccountStore(store: store).email(of: userID)
    }

    func userID(ofEmail email: String) async throws -> String? {
        try await AccountStore(store: store).userID(ofEmail: email)
    }
}
