import Logging
import SyncProtocol
import SyncStorage

/// What a write validator can read (``ObjectReading``), inside the upload's transaction:
/// reads see the upload's own changes and those of the uploads before it in the transaction.
public struct ValidationContext: ObjectReading {
    package let transaction: WriteTransaction

    package init(transaction: WriteTransaction) {
        self.transaction = transaction
    }

    public var logger: Logger { transaction.logger }

    public func bodies(of keys: [ObjectKey]) async throws -> [ObjectKey: [String: JSONValue]] {
        try await transaction.load(keys).compactMapValues(\.state.body)
    }

    public func email(ofUser userID: String) async throws -> String? {
        try await AccountStore.email(of: userID, on: transaction.connection, logger: transaction.logger)
    }

    public func userID(ofEmail email: String) async throws -> String? {
        try await AccountStore.userID(ofEmail: email, on: transaction.connection, logger: transaction.logger)
    }
}
