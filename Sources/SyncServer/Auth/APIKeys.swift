import Foundation
import Logging
import PartitionSync
import PostgresNIO
import SyncProtocol
import SyncStorage

/// Server-side API keys: a back-end service authenticates with `Authorization: Bearer psk_…`
/// and acts as the principal `service:<name>`. Only a digest of each key is stored; the key
/// itself is shown once, when it is created.
package struct APIKeys: Sendable {
    static let prefix = "psk_"

    let keys: APIKeyStore

    package init(client: PostgresClient, logger: Logger) {
        self.keys = APIKeyStore(client: client, logger: logger)
    }

    /// Creates a key for a service name and returns it; `bad_request` if the name has a live key.
    package func create(name: String) async throws -> String {
        guard !name.isEmpty, name.count <= 64,
            name.unicodeScalars.allSatisfy({ $0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-" || $0 == "_" })
        else {
            throw SyncError(.badRequest, "a key name has 1 to 64 letters, digits, '-' or '_'")
        }
        let key = SecretHash.makeSecret(prefix: Self.prefix)
        if try await keys.create(name: name, digest: SecretHash.digest(key)) { return key }
        throw SyncError(.badRequest, "the key '\(name)' exists; revoke it first")
    }

    /// Revokes a key; returns whether one was live. Its open sessions close on every instance
    /// (the key's digest is recorded in `psync_revocations` for good).
    @discardableResult
    package func revoke(name: String) async throws -> Bool {
        try await keys.revoke(name: name)
    }

    /// The names of the live keys, with when they were created and last used.
    package func list() async throws -> [(name: String, created: Date, lastUsed: Date?)] {
        try await keys.list()
    }

    /// The service name of a live key; `unauthenticated` otherwise.
    func verify(_ key: String) async throws -> String {
        guard let name = try await keys.name(ofKeyWith: SecretHash.digest(key)) else {
            throw SyncError(.unauthenticated, "the API key is not valid")
        }
        return name
    }
}
