/// People named by their account's email, lowercased: how an application that lists people in
/// its documents (a room's owners and members, a wiki's members) names them, as Sync
/// Gateway's applications named users. The email is the account's verified one (docs/SECURITY.md,
/// "Identity"), so a name in a list cannot be claimed by someone else.
///
/// ```swift
/// guard let name = try await context.emailName(of: principal) else { return false }
/// return room.owners.contains(name) || room.members.contains(name)
/// ```
public enum EmailName {
    /// Whether `text` is a name: an email address as accounts hold them, lowercased, at most
    /// 254 characters, with one `@` at neither end.
    public static func isValid(_ text: String) -> Bool {
        text.count <= 254 && text == text.lowercased() && text.split(separator: "@", omittingEmptySubsequences: false).count == 2
            && !text.hasPrefix("@") && !text.hasSuffix("@")
    }
}

extension ObjectReading {
    /// The name (``EmailName``) of a principal: its account's email, lowercased; `nil` for
    /// services, the system, and deleted accounts.
    public func emailName(of principal: Principal) async throws -> String? {
        try await email(of: principal)?.lowercased()
    }
}
