import SyncProtocol

/// An object event's documents decoded as ``SyncModel`` types.
///
/// ```swift
/// let user = try event.after(as: User.self)
/// ```
extension ChangeEvent {
    /// The object before the change, decoded; `nil` for an insert, for an object of another
    /// collection, and for other kinds of events. A body that does not decode is a
    /// `type_mismatch` error.
    public func before<Model: SyncModel>(as type: Model.Type) throws -> Model? {
        try decode(before, as: type)
    }

    /// The object after the change, decoded; `nil` for a delete, for an object of another
    /// collection, and for other kinds of events.
    public func after<Model: SyncModel>(as type: Model.Type) throws -> Model? {
        try decode(after, as: type)
    }

    private func decode<Model: SyncModel>(_ body: [String: JSONValue]?, as type: Model.Type) throws -> Model? {
        guard let key, key.collection == Model.collection, let body else { return nil }
        return try Model.decode(body, of: key)
    }
}
