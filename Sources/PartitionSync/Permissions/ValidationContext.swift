import Logging
import SyncProtocol

/// What a write validator can read (``ObjectReading``), inside the upload's transaction:
/// reads see the upload's own changes and those of the uploads before it in the transaction.
public struct ValidationContext: ObjectReading {
    /// The upload's transaction in the server; in an application's tests, the test kit's
    /// `InMemoryObjects` holding what that transaction would see.
    private let source: any ObjectReading
    public let logger: Logger

    public init(source: any ObjectReading, logger: Logger = Logger(label: "psync.validation")) {
        self.source = source
        self.logger = logger
    }

    public func bodies(of keys: [ObjectKey]) async throws -> [ObjectKey: [String: JSONValue]] {
        try await source.bodies(of: keys)
    }

    public func email(ofUser userID: String) async throws -> String? {
        try await source.email(ofUser: userID)
    }

    public func userID(ofEmail email: String) async throws -> String? {
        try await source.userID(ofEmail: email)
    }
}
