import Foundation
import SyncProtocol

/// What one notification on ``ObjectStore/notificationChannel`` says. Every producer encodes
/// its payload here (``payload``) and the listener parses it once (``init(payload:)``), then
/// hands the typed value to whoever it concerns.
///
/// The text of each kind is fixed: instances of an older version may share the database and
/// read it.
///
/// | kind | payload |
/// |---|---|
/// | ``committed(_:version:)`` | `<version>:<partition>` |
/// | ``eventsRecorded`` | `events` |
/// | ``sequenced(through:)`` | `seq:<position>` |
/// | ``instanceArrived(_:)`` | `instance:<name>` |
/// | ``revoked(_:expires:)`` | `revoked:<kind>:<expiry as Unix seconds, or never>:<subject>` |
package enum ChangeNotification: Sendable, Hashable {
    /// A commit changed `partition`, which is now at `version`.
    case committed(Partition, version: Int64)
    /// A commit recorded events that the sequencer has not numbered yet.
    case eventsRecorded
    /// A sequencer pass numbered events up to and including `through`.
    case sequenced(through: Int64)
    /// An instance named so started: the others announce their commits from now on.
    case instanceArrived(String)
    /// A credential was revoked, until `expires` (`nil`: never).
    case revoked(Revocation, expires: Date?)

    static let eventsPayload = "events"
    static let sequencedPrefix = "seq:"
    static let instancePrefix = "instance:"
    /// Also written by the SQL that records a revocation (``RevocationLedger``).
    static let revokedPrefix = "revoked:"

    /// The text sent on the channel.
    package var payload: String {
        switch self {
        case .committed(let partition, let version): "\(version):\(partition)"
        case .eventsRecorded: Self.eventsPayload
        case .sequenced(let through): Self.sequencedPrefix + String(through)
        case .instanceArrived(let name): Self.instancePrefix + name
        case .revoked(let revocation, let expires):
            Self.revokedPrefix + revocation.kind.rawValue + ":"
                + (expires.map { String(Int64($0.timeIntervalSince1970.rounded(.up))) } ?? "never") + ":" + revocation.subject
        }
    }

    /// Parses a payload; `nil` when it is none of the kinds (malformed, or of a newer version).
    package init?(payload: String) {
        if payload == Self.eventsPayload {
            self = .eventsRecorded
        } else if payload.hasPrefix(Self.sequencedPrefix) {
            guard let through = Int64(payload.dropFirst(Self.sequencedPrefix.count)) else { return nil }
            self = .sequenced(through: through)
        } else if payload.hasPrefix(Self.instancePrefix) {
            self = .instanceArrived(String(payload.dropFirst(Self.instancePrefix.count)))
        } else if payload.hasPrefix(Self.revokedPrefix) {
            let parts = payload.dropFirst(Self.revokedPrefix.count).split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, let kind = Revocation.Kind(rawValue: String(parts[0])) else { return nil }
            let expires: Date?
            if parts[1] == "never" {
                expires = nil
            } else if let seconds = Int64(parts[1]) {
                expires = Date(timeIntervalSince1970: TimeInterval(seconds))
            } else {
                return nil
            }
            self = .revoked(Revocation(kind: kind, subject: String(parts[2])), expires: expires)
        } else {
            guard let colon = payload.firstIndex(of: ":"), let version = Int64(payload[..<colon]),
                let partition = try? Partition(String(payload[payload.index(after: colon)...]))
            else { return nil }
            self = .committed(partition, version: version)
        }
    }
}
