import PartitionSync
import SyncProtocol

/// The committed objects and accounts of the engine's store: what permission rules read.
package struct StoreObjectSource: ObjectSource {
    let store: ObjectStore

    package init(store: ObjectStore) {
        self.store = store
    }

    package func liveObjects(_ keys: [ObjectKey]) async throws -> [(partition: Partition, object: SyncObject)] {
        try await store.objects(keys).compactMap { partition, object in
            guard !object.isDeleted, let partition = try? Partition(partition) else { return nil }
            return (partition, object)
        }
    }

    package func email(ofUser userID: String) async throws -> String? {
        try await AccountStore(store: store).email(of: userID)
    }

    package func userID(ofEmail email: String) async throws -> String? {
        try await AccountStore(store: store).userID(ofEmail: email)
    }
}
