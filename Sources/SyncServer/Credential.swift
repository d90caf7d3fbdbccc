import Foundation
import SyncStorage

/// What a bearer credential grants: the principal, until when, and the revocations that end it.
public struct Credential: Sendable, Hashable {
    public var principal: Principal
    /// When an access token expires; `nil` for an API key (sessions bound their own lifetime).
    public var expires: Date?
    /// Any of these in force ends the credential: for an access token its user and its
    /// refresh-token family (`sid`), for an API key its digest.
    public var revokedBy: [Revocation]

    public init(principal: Principal, expires: Date?, revokedBy: [Revocation]) {
        self.principal = principal
        self.expires = expires
        self.revokedBy = revokedBy
    }
}
