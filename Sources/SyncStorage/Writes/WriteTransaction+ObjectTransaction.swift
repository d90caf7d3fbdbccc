import PartitionSync
import SyncProtocol

/// The engine's transaction is what validators read and trigger handlers read and write
/// through (``ValidationContext``, ``TriggerContext``).
extension WriteTransaction: ObjectTransaction {
    @discardableResult
    package func apply(_ operations: [SyncOperation], in partition: Partition) async throws -> [ObjectChange] {
        try await apply(operations, in: partition, validate: nil)
    }

    package func bodies(of keys: [ObjectKey]) async throws -> [ObjectKey: [String: JSONValue]] {
        try await load(keys).compactMapValues(\.state.body)
    }

    /// Locks `partition` (bumping its version, as its first write would) and reads the keys
    /// after the lock, in one round trip; the states read are the ones its writes then start
    /// from, without reading again.
    package func bodiesForUpdate(of keys: [ObjectKey], in partition: Partition) async throws -> [ObjectKey: [String: JSONValue]] {
        let name = partition.description
        return try await lockAndLoad([partition], keys).compactMapValues { $0.partition == name ? $0.state.body : nil }
    }

    package func email(ofUser userID: String) async throws -> String? {
        try await AccountStore.email(of: userID, on: connection, logger: logger)
    }

    package func userID(ofEmail email: String) async throws -> String? {
        try await AccountStore.userID(ofEmail: email, on: connection, logger: logger)
    }

    /// Read under the user's presence lock: a session opening after this read commits its
    /// `session opened` event after this transaction.
    package func openSessions(of userID: String) async throws -> Int {
        try await PresenceLedger.openSessions(of: userID, on: connection, logger: logger)
    }
}
