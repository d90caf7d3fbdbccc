/// One user of an App Services users export, as the Admin API lists them
/// (`GET /groups/{groupId}/apps/{appId}/users`, a JSON array): its id, which becomes the
/// account's id so `user=<id>` partitions keep working, and its email (`data.email`, which the
/// email/password provider fills in). Pure.
public struct AppServicesUser: Sendable, Hashable {
    public var id: String
    public var email: String
    /// Whether App Services had disabled the user.
    public var disabled: Bool

    public init(id: String, email: String, disabled: Bool = false) {
        self.id = id
        self.email = email
        self.disabled = disabled
    }

    /// The user of one element of the export; refuses (``ImportError/Kind/invalidUser``) one
    /// without an id or without an email (anonymous, API key and custom JWT users have none:
    /// they have no password to set).
    public init(document: BSONDocument) throws(ImportError) {
        let id = try DocumentPlacement.objectID(document["_id"])
        var email: String?
        if case .document(let data)? = document["data"], case .string(let text)? = data["email"] { email = text }
        guard let email, !email.isEmpty else {
            throw ImportError(
                .invalidUser, "the user has no data.email (only email/password users can be imported)",
                path: FieldPath([.field("data"), .field("email")]), documentID: id)
        }
        let disabled: Bool = if case .bool(true)? = document["disabled"] { true } else { false }
        self.init(id: id, email: email, disabled: disabled)
    }
}
