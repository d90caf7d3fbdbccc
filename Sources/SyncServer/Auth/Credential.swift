import Foundation
import PartitionSync
import SyncStorage

/// What a bearer credential grants: the principal, until when, and the revocations that end it.
package struct Credential: Sendable, Hashable {
    package var principal: Principal
    /// When an access token expires; `nil` for an API key (sessions bound their own lifetime).
    package var expires: Date?
    /// Any of these in force ends the credential: for an access token its user and its
    /// refresh-token family (`sid`), for an API key its digest.
    package var revokedBy: [Revocation]

    package init(principal: Principal, expires: Date?, revokedBy: [Revocation]) {
        self.principal = principal
        self.expires = expires
        self.revokedBy = revokedBy
    }
}
