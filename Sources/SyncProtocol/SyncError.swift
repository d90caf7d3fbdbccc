/// An error of the sync contract, with a stable machine-readable ``Code`` and a message for
/// humans. Every layer reports contract errors with this type; the server maps each code to
/// its HTTP status and WebSocket answer. A message never contains SQL or stack traces.
public struct SyncError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable error code, sent on the wire as its `rawValue`.
    ///
    /// Applications may define more codes; those of the contract are listed here and in
    /// docs/PROTOCOL.md.
    public struct Code: RawRepresentable, Sendable, Hashable, Codable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // Codes of the wire contract (../shared/PROTOCOL.md).
        public static let badRequest = Code("bad_request")
        public static let invalidPartition = Code("invalid_partition")
        public static let invalidOperation = Code("invalid_operation")
        public static let unauthenticated = Code("unauthenticated")
        public static let tokenExpired = Code("token_expired")
        public static let invalidCredentials = Code("invalid_credentials")
        public static let emailTaken = Code("email_taken")
        public static let permissionDenied = Code("permission_denied")
        public static let permissionRevoked = Code("permission_revoked")
        public static let validationFailed = Code("validation_failed")
        public static let payloadTooLarge = Code("payload_too_large")
        public static let rateLimited = Code("rate_limited")
        public static let unsupportedProtocol = Code("unsupported_protocol")
        public static let `internal` = Code("internal")
        public static let unavailable = Code("unavailable")

        // Codes PartitionSync adds (docs/PROTOCOL.md, "Error codes").
        /// A collection name outside `[A-Za-z][A-Za-z0-9_]{0,63}`.
        public static let invalidCollection = Code("invalid_collection")
        /// An object id that is empty, longer than 256 characters or holds control characters.
        public static let invalidObjectID = Code("invalid_object_id")
        /// A path that does not follow the path syntax.
        public static let invalidPath = Code("invalid_path")
        /// An operation on an object of another partition, or a body naming another partition.
        public static let partitionMismatch = Code("partition_mismatch")
        /// An operation other than `put` on an object that never existed.
        public static let notFound = Code("not_found")
        /// A path that runs through a value of the wrong kind, or an operation on a value of the wrong kind.
        public static let typeMismatch = Code("type_mismatch")
        /// An array index or `[field=value]` selector that matches no element.
        public static let pathNotFound = Code("path_not_found")
        /// An attempt to change `_id` or `partition`.
        public static let immutableField = Code("immutable_field")
        /// JSON nested deeper than the configured limit.
        public static let jsonTooDeep = Code("json_too_deep")
        /// More operations in one upload than the configured limit.
        public static let tooManyOperations = Code("too_many_operations")
        /// An HTTP method the path does not take (405, with `Allow`).
        public static let methodNotAllowed = Code("method_not_allowed")
        /// The session's credential was revoked (account deleted, logout, API key revoked):
        /// the session is closed with 4001.
        public static let sessionRevoked = Code("session_revoked")
        /// The user has as many WebSocket sessions open on the instance as allowed (429 at the
        /// upgrade; after `auth`, the session is closed with 4003).
        public static let tooManySessions = Code("too_many_sessions")
        /// A blob reference is not `{"@blob": "sha256:<64 hex>", "length": N, "contentType": "…"}`.
        public static let invalidBlobReference = Code("invalid_blob_reference")
        /// An upload references blobs that are not stored (or not with that length): upload
        /// them first. `details.digests` lists them.
        public static let blobMissing = Code("blob_missing")
        /// The bytes of a blob upload do not have the digest it was sent to.
        public static let digestMismatch = Code("digest_mismatch")
        /// The blob would take the uploader over their storage quota.
        public static let quotaExceeded = Code("quota_exceeded")
        /// An email verification code that is not the account's live one (wrong, expired,
        /// replaced by a newer one, or spent by too many wrong guesses).
        /// `details.attemptsLeft` says how many more guesses the live code takes.
        public static let invalidCode = Code("invalid_code")
        /// A one-time token (an imported account's password-set token) that is unknown, used
        /// or expired.
        public static let invalidToken = Code("invalid_token")
    }

    public var code: Code
    public var message: String
    /// Machine-readable particulars of some codes (`blob_missing`: `{"digests": […]}`),
    /// sent beside the code and message.
    public var details: JSONValue?

    public init(_ code: Code, _ message: String, details: JSONValue? = nil) {
        self.code = code
        self.message = message
        self.details = details
    }

    public var description: String { "\(code.rawValue): \(message)" }
}
