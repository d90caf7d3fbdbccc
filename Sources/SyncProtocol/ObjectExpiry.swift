import Foundation

/// When an object expires: its body's top-level field `@expiresAt`, an RFC 3339 date-time
/// string (`2026-11-25T12:00:00Z`, fractional seconds and offsets allowed, read by ``RFC3339``). At that time the
/// server deletes the object as a client's `delete` would (docs/PROTOCOL.md, "Expiry"); an
/// update may move, add or remove the field.
public enum ObjectExpiry {
    /// The top-level field that holds the expiry time.
    public static let field = "@expiresAt"

    /// The expiry time of a body, `nil` when it has none; `validation_failed` when the field
    /// is not an RFC 3339 date-time string.
    public static func date(of body: [String: JSONValue]) throws(SyncError) -> Date? {
        guard let value = body[field] else { return nil }
        guard let text = value.stringValue, let date = parse(text) else {
            throw SyncError(.validationFailed, "'\(field)' is an RFC 3339 date-time string such as 2026-11-25T12:00:00Z")
        }
        return date
    }

    /// The field's value for `date`, in UTC with milliseconds.
    public static func string(_ date: Date) -> String {
        JSONValue.iso8601(date)
    }

    /// A strict RFC 3339 date-time (``RFC3339``), as PostgreSQL's `psync_expiry_of` reads it
    /// too (migration 0011).
    static func parse(_ text: String) -> Date? {
        RFC3339.date(text)
    }
}
