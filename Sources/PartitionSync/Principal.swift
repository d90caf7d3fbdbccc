import SyncProtocol

/// Who makes a request: a registered user, a back-end service holding an API key, or the
/// server itself (a trigger). Permission rules decide per principal.
public enum Principal: Sendable, Hashable, CustomStringConvertible {
    /// A user, by user id.
    case user(String)
    /// A service authenticated with an API key, by key name.
    case service(String)
    /// The server itself, e.g. a trigger, by name. Bypasses the permission rules.
    case system(String)

    /// The stable text form, which also scopes upload request ids: the user id itself,
    /// `service:<name>` or `system:<name>`.
    public var description: String {
        switch self {
        case .user(let id): id
        case .service(let name): "service:\(name)"
        case .system(let name): "system:\(name)"
        }
    }

    /// The user id, for a user.
    public var userID: String? {
        if case .user(let id) = self { return id }
        return nil
    }
}
