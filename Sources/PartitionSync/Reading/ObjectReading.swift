import SyncProtocol

/// What permission rules, write validators and triggers read: objects by key (as raw bodies
/// or decoded into ``SyncModel`` types) and the emails of accounts. ``PermissionContext``,
/// ``ValidationContext`` and ``TriggerContext`` all read this way; the last two see their
/// transaction's own writes.
public protocol ObjectReading {
    /// The bodies of the live objects among `keys`, read in one round trip; deleted and
    /// absent objects are left out.
    func bodies(of keys: [ObjectKey]) async throws -> [ObjectKey: [String: JSONValue]]
    /// The email a user account registered with, or `nil` when there is no such account (it
    /// was deleted).
    func email(ofUser userID: String) async throws -> String?
    /// The id of the user account registered with `email` (compared case-insensitively), or `nil`.
    func userID(ofEmail email: String) async throws -> String?
}

extension ObjectReading {
    /// The body of the live object under `key`, or `nil`.
    public func body(of key: ObjectKey) async throws -> [String: JSONValue]? {
        try await bodies(of: [key])[key]
    }

    /// The live object of `type` with id `id`, decoded, or `nil` when it does not exist.
    /// A body that does not decode as `type` is a `type_mismatch` error (for a trigger, a
    /// dead letter at the first attempt: the data will not change by retrying).
    public func object<Model: SyncModel>(_ type: Model.Type, id: String) async throws -> Model? {
        let key = try ObjectKey(collection: Model.collection, id: id)
        return try await bodies(of: [key])[key].map { try Model.decode($0, of: key) }
    }

    /// The live objects of `type` among `ids`, decoded, by id; absent ones are left out.
    public func objects<Model: SyncModel>(_ type: Model.Type, ids: [String]) async throws -> [String: Model] {
        let keys = try ids.map { try ObjectKey(collection: Model.collection, id: $0) }
        var models: [String: Model] = [:]
        for (key, body) in try await bodies(of: keys) {
            models[key.id] = try Model.decode(body, of: key)
        }
        return models
    }

    /// The email of a user principal's account; `nil` for services, the system, and deleted
    /// accounts.
    public func email(of principal: Principal) async throws -> String? {
        guard let userID = principal.userID else { return nil }
        return try await email(ofUser: userID)
    }
}
