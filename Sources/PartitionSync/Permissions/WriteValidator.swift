import SyncProtocol

/// Checks each object change of an upload inside its transaction, before it is written;
/// throw ``SyncError/refusal(_:)`` (`validation_failed` with a reason) to refuse the whole upload (the way a
/// Couchbase sync function throws `forbidden`). Principals of kind `system` (the server's own
/// triggers) are not validated.
///
/// ```swift
/// struct AuthorValidator: WriteValidator {
///     func validate(_ change: ObjectChange, in partition: Partition, by principal: Principal, context: ValidationContext) async throws {
///         guard let email = try await context.email(of: principal), change.after.body?["author"] == .string(email) else {
///             throw SyncError.refusal("a message's author is its writer")
///         }
///     }
/// }
/// ```
public protocol WriteValidator: Sendable {
    func validate(_ change: ObjectChange, in partition: Partition, by principal: Principal, context: ValidationContext) async throws
}

extension SyncError {
    /// A validator's refusal of an upload: `validation_failed`, with the reason a client shows.
    public static func refusal(_ reason: String) -> SyncError {
        SyncError(.validationFailed, reason)
    }
}
