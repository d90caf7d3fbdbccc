import Logging
import SyncProtocol
import SyncStorage

/// What a write validator can read (``ObjectReading``), inside the upload's transaction:
/// reads see the upload's own changes and those of the uploads before it in the transaction.
public struct ValidationContext: ObjectReading {
    private enum Source {
        /// The upload's transaction, in the server.
        case transaction(WriteTransaction)
        /// Objects given by a test (the test kit's `InMemoryObjects`).
        case objects(any ObjectSource)
    }

    private let source: Source
    public let logger: Logger

    package init(transaction: WriteTransaction) {
        self.source = .transaction(transaction)
        self.logger = transaction.logger
    }

    /// A context reading from `source`: in an application's tests, the test kit's
    /// `InMemoryObjects` holding what the upload's transaction would see.
    public init(source: any ObjectSource, logger: Logger = Logger(label: "psync.validation")) {
        self.source = .objects(source)
        self.logger = logger
    }

    public func bodies(of keys: [ObjectKey]) async throws -> [ObjectKey: [String: JSONValue]] {
        switch source {
        case .transaction(let transaction):
            return try await transaction.load(keys).compactMapValues(\.state.body)
        case .objects(let objects):
            var bodies: [ObjectKey: [String: JSONValue]] = [:]
            for (_, object) in try await objects.liveObjects(keys) { bodies[object.key] = object.body }
            return bodies
        }
    }

    public func email(ofUser userID: String) async throws -> String? {
        switch source {
        case .transaction(let transaction):
            try await AccountStore.email(of: userID, on: transaction.connection, logger: transaction.logger)
        case .objects(let objects):
            try await objects.email(ofUser: userID)
        }
    }

    public func userID(ofEmail email: String) async throws -> String? {
        switch source {
        case .transaction(let transaction):
            try await AccountStore.userID(ofEmail: email, on: transaction.connection, logger: transaction.logger)
        case .objects(let objects):
            try await objects.userID(ofEmail: email)
        }
    }
}
