import Foundation
import SyncProtocol

/// One committed change, as triggers receive it: written in the same transaction as the
/// change (so none is lost or invented) and numbered after commit in an order consistent with
/// the commit order (so two changes of one partition arrive in the order they committed).
public struct ChangeEvent: Sendable, Hashable {
    /// What kind of thing changed.
    public enum Kind: String, Sendable, Hashable {
        /// An object of a partition.
        case object
        /// A user account: `registered`, `verified`, `deleted`.
        case user
        /// A user's presence: `opened` (first session), `closed` (last session).
        case session
    }

    /// What happened.
    public struct Operation: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// An object was created (or created again after a deletion).
        public static let insert = Operation(rawValue: "insert")
        /// Fields of an object changed.
        public static let update = Operation(rawValue: "update")
        /// An object was rewritten by a `put`.
        public static let replace = Operation(rawValue: "replace")
        /// An object was deleted.
        public static let delete = Operation(rawValue: "delete")
        /// An object was brought in by `psync import` (docs/MIGRATING.md), or a user account
        /// was (kind `user`, its details naming the email): not written by a client, so a
        /// trigger on `insert` does not see it; one that should (to build derived records
        /// from imported data) names `import` among its operations (docs/TRIGGERS.md).
        public static let `import` = Operation(rawValue: "import")
        /// A user registered.
        public static let registered = Operation(rawValue: "registered")
        /// A user proved that they receive mail at their account's email (docs/SECURITY.md,
        /// "Identity"); the details name the email.
        public static let verified = Operation(rawValue: "verified")
        /// A user account was deleted.
        public static let deleted = Operation(rawValue: "deleted")
        /// A user's first session opened.
        public static let opened = Operation(rawValue: "opened")
        /// A user's last session closed (or the instance holding it died).
        public static let closed = Operation(rawValue: "closed")
    }

    /// The position in the event order: gapless, increasing.
    public var position: Int64
    public var kind: Kind
    public var operation: Operation
    /// The object, for object events.
    public var key: ObjectKey?
    /// The object's partition, for object events.
    public var partition: Partition?
    /// The partition version the change committed at, for object events.
    public var version: Int64?
    /// The user, for user and session events.
    public var userID: String?
    /// The document before the change (`nil` for an insert).
    public var before: [String: JSONValue]?
    /// The document after the change (`nil` for a delete).
    public var after: [String: JSONValue]?
    /// Field paths whose value is new or different.
    public var changedFields: [String]
    /// Field paths that were removed.
    public var removedFields: [String]
    /// Who made the change: a user id, `service:<name>`, or `trigger:<name>`.
    public var author: String
    /// 0 for changes by clients; one more than the handled event's for changes by triggers.
    public var depth: Int
    /// When the change was made (inside its transaction, just before commit).
    public var created: Date

    public init(
        position: Int64, kind: Kind, operation: Operation, key: ObjectKey? = nil, partition: Partition? = nil,
        version: Int64? = nil, userID: String? = nil, before: [String: JSONValue]? = nil, after: [String: JSONValue]? = nil,
        changedFields: [String] = [], removedFields: [String] = [], author: String, depth: Int = 0, created: Date = Date()
    ) {
        self.position = position
        self.kind = kind
        self.operation = operation
        self.key = key
        self.partition = partition
        self.version = version
        self.userID = userID
        self.before = before
        self.after = after
        self.changedFields = changedFields
        self.removedFields = removedFields
        self.author = author
        self.depth = depth
        self.created = created
    }

    /// The collection of an object event.
    public var collection: String? { key?.collection }

    /// The operation an object change is recorded as: `delete`, `replace` (a put over a live
    /// object), `update`, or `insert`.
    package static func operation(of change: ObjectChange) -> Operation {
        switch (change.before, change.after) {
        case (.live, .deleted): .delete
        case (.live, .live): change.replaced ? .replace : .update
        default: .insert
        }
    }

    /// The email of a user event's account if it is verified, the only one an application
    /// may bind access to (docs/SECURITY.md, "Identity"): an account `registered` with a
    /// verified email (email verification off, or an identity provider vouched for it), one
    /// that `verified` its email, or one `deleted` after verifying it. `nil` otherwise.
    public var verifiedEmail: String? {
        guard kind == .user, after?["emailVerified"] != .bool(false) else { return nil }
        return after?["email"]?.stringValue
    }
}
