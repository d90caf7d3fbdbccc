import Foundation

/// A revoked credential: every access it granted ends, on every server instance.
///
/// It is announced on ``ObjectStore/notificationChannel`` as
/// `revoked:<kind>:<expiry as Unix seconds, or never>:<subject>`.
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

    static let payloadPrefix = "revoked:"

    /// Parses the payload of a notification announcing a revocation, with when it lapses
    /// (`nil`: never); `nil` for any other payload.
    package static func parse(payload: String) -> (revocation: Revocation, expires: Date?)? {
        guard payload.hasPrefix(payloadPrefix) else { return nil }
        let parts = payload.dropFirst(payloadPrefix.count).split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, let kind = Kind(rawValue: String(parts[0])) else { return nil }
        let expires: Date?
        if parts[1] == "never" {
            expires = nil
        } else if let seconds = Int64(parts[1]) {
            expires = Date(timeIntervalSince1970: TimeInterval(seconds))
        } else {
            return nil
        }
        return (Revocation(kind: kind, subject: String(parts[2])), expires)
    }

    package var description: String { "\(kind.rawValue):\(subject)" }
}
