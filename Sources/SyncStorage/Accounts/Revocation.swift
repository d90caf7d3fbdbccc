import Foundation

/// A revoked credential: every access it granted ends, on every server instance.
///
/// It is announced on ``ObjectStore/notificationChannel`` as
/// ``ChangeNotification/revoked(_:expires:)``.
package struct Revocation: Sendable, Hashable, CustomStringConvertible {
    /// What is revoked.
    package enum Kind: String, Sendable, Hashable, CaseIterable {
        /// Every access token of a user (the account was deleted).
        case user
        /// The access tokens issued with one refresh-token family (a logout): their `sid` claim.
        case family
        /// An API key, by the hex SHA-256 digest of the key.
        case key
    }

    package var kind: Kind
    package var subject: String

    package init(kind: Kind, subject: String) {
        self.kind = kind
        self.subject = subject
    }

    /// Every access token of a user.
    package static func user(_ id: String) -> Revocation { Revocation(kind: .user, subject: id) }

    /// The access tokens of one refresh-token family (their `sid` claim).
    package static func family(_ id: String) -> Revocation { Revocation(kind: .family, subject: id.lowercased()) }

    /// An API key, by the SHA-256 digest it is stored as.
    package static func key(digest: some Sequence<UInt8>) -> Revocation {
        Revocation(kind: .key, subject: digest.map { String(format: "%02x", $0) }.joined())
    }

    package var description: String { "\(kind.rawValue):\(subject)" }
}
