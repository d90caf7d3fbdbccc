/// The declared shape and bounds of a collection's documents: which fields they have, of what
/// kind, how long their strings and arrays may be, and how large the whole body may be. An
/// application declares one per collection (`Permissions.declare(_:)`); the engine checks every
/// client write against it before the application's validators and refuses what does not fit
/// with `validation_failed`, `details.field` naming the field (docs/APPS.md, "Bounds").
///
/// ```swift
/// let profile = DocumentSchema(collection: "profile", maximumBodyBytes: 16 << 10, fields: [
///     .init("type", .string(maximumLength: 20)),
///     .init("nick", .string(maximumLength: 100), required: false),
///     .init("accepts", .array(of: .string(maximumLength: 254), maximumCount: 100), required: false),
/// ])
/// ```
///
/// Fields not declared are refused unless ``otherFields`` allows them; a document written
/// without a declared field that is ``Field/required`` is refused. The fields the engine
/// itself sets or checks (`_id`, `partition`, `@expiresAt`) are always allowed.
public struct DocumentSchema: Sendable, Hashable {
    /// Fields every document may have, set or checked by the engine.
    public static let engineFields = ["_id", "partition", ObjectExpiry.field]

    /// The kind of a field's value, with its bounds.
    public indirect enum Kind: Sendable, Hashable {
        /// A string of at most that many characters (and at least `minimumLength`).
        case string(minimumLength: Int = 0, maximumLength: Int)
        /// A string that is one of these.
        case oneOf([String])
        /// An integer, within the range when one is given.
        case integer(ClosedRange<Int64>? = nil)
        /// Any JSON number.
        case number
        case boolean
        /// A strict RFC 3339 date-time string (``RFC3339``).
        case date
        /// A blob reference (`{"@blob", "length", "contentType"}`).
        case blob
        /// An object with these fields.
        case object([Field], otherFields: OtherFields = .refused)
        /// An array of at most `maximumCount` elements, each of `element`'s kind.
        case array(of: Kind, maximumCount: Int)
        /// Any JSON value whose compact form is at most that many bytes.
        case any(maximumBytes: Int)
        /// `null` or a value of the kind.
        case nullable(Kind)
    }

    /// A declared field.
    public struct Field: Sendable, Hashable {
        public var name: String
        public var kind: Kind
        /// Whether every document must have it.
        public var required: Bool

        public init(_ name: String, _ kind: Kind, required: Bool = true) {
            self.name = name
            self.kind = kind
            self.required = required
        }
    }

    /// What becomes of fields an object does not declare.
    public enum OtherFields: Sendable, Hashable {
        /// Refused: the shape is closed.
        case refused
        /// Allowed, each a value of at most that many bytes of compact JSON.
        case allowed(maximumBytes: Int)
    }

    /// The collection whose documents this describes.
    public var collection: String
    /// The largest body, in bytes of compact JSON (at most the engine's own limit).
    public var maximumBodyBytes: Int
    /// The top-level fields.
    public var fields: [Field]
    public var otherFields: OtherFields

    public init(collection: String, maximumBodyBytes: Int, fields: [Field], otherFields: OtherFields = .refused) {
        self.collection = collection
        self.maximumBodyBytes = maximumBodyBytes
        self.fields = fields
        self.otherFields = otherFields
    }

    /// Checks a document's body as a write leaves it: `validation_failed` naming the first
    /// field that does not fit (`details.field`, a path such as `members[3].userName`), or the
    /// body's size. Given the body `before` the write, a top-level field the write left as it
    /// was is not checked again (it was accepted then, or the server wrote it), and the size
    /// only when the write grows the body: a user's write is refused for what it changes.
    ///
    /// `encodedSize` is the size of the body's compact JSON when the caller has it already (the
    /// engine encodes every body it stores once, ``ObjectChange/encodedBody``); the body before
    /// the write is encoded only when the new one is over the bound.
    public func check(_ body: [String: JSONValue], before: [String: JSONValue]? = nil, encodedSize: Int? = nil) throws(SyncError) {
        var unchanged = Set<String>()
        if let before {
            for (name, value) in body where before[name] == value { unchanged.insert(name) }
        }
        // The fields first: a refusal that names one says more than one of the whole size. The
        // engine's fields are passed over (not removed from a copy of the body: copying it
        // and hashing its names cost every write).
        try Self.check(body, against: self.fields, otherFields: otherFields, at: "", in: collection, skipping: unchanged, passingOver: Self.engineFields)
        let size = encodedSize ?? JSONValue.object(body).jsonBytes.count
        guard size > maximumBodyBytes else { return }
        let grew = before.map { size > JSONValue.object($0).jsonBytes.count } ?? true
        guard !grew else {
            throw SyncError(
                .validationFailed, "a \(collection) document is at most \(maximumBodyBytes) bytes; this one is \(size)",
                details: ["field": "", "limit": .int(Int64(maximumBodyBytes))])
        }
    }

    /// Checks an object's fields; `passingOver` names fields taken as absent (the engine's, at
    /// the top). Declared fields are few: they are searched in order, not hashed.
    private static func check(
        _ object: [String: JSONValue], against declared: [Field], otherFields: OtherFields, at path: String, in collection: String,
        skipping unchanged: Set<String> = [], passingOver ignored: [String] = []
    ) throws(SyncError) {
        for field in declared {
            let fieldPath = path.isEmpty ? field.name : path + "." + field.name
            guard !ignored.contains(field.name), let value = object[field.name] else {
                if field.required { throw refusal(collection, fieldPath, "is required") }
                continue
            }
            if !unchanged.isEmpty, unchanged.contains(field.name) { continue }
            try check(value, as: field.kind, at: fieldPath, in: collection)
        }
        for (name, value) in object
        where !declared.contains(where: { $0.name == name }) && !ignored.contains(name) && (unchanged.isEmpty || !unchanged.contains(name)) {
            let fieldPath = path.isEmpty ? name : path + "." + name
            switch otherFields {
            case .refused:
                throw refusal(collection, fieldPath, "is not a field of a \(collection) document")
            case .allowed(let maximumBytes):
                guard value.jsonBytes.count <= maximumBytes else {
                    throw refusal(collection, fieldPath, "holds at most \(maximumBytes) bytes", limit: maximumBytes)
                }
            }
        }
    }

    private static func check(_ value: JSONValue, as kind: Kind, at path: String, in collection: String) throws(SyncError) {
        switch kind {
        case .nullable(let inner):
            if case .null = value { return }
            try check(value, as: inner, at: path, in: collection)
        case .string(let minimum, let maximum):
            guard let text = value.stringValue else { throw refusal(collection, path, "is a string") }
            // A string holds no more characters than UTF-8 bytes, and a non-empty one at least
            // one: most strings are within the bounds without counting their characters (which
            // walks their grapheme breaks).
            let bytes = text.utf8.count
            if bytes <= maximum, minimum <= min(bytes, 1) { return }
            let count = text.count
            guard count <= maximum else { throw refusal(collection, path, "has at most \(maximum) characters", limit: maximum) }
            guard count >= minimum else { throw refusal(collection, path, "has at least \(minimum) characters", limit: minimum) }
        case .oneOf(let choices):
            guard let text = value.stringValue, choices.contains(text) else {
                throw refusal(collection, path, "is one of \(choices.joined(separator: ", "))")
            }
        case .integer(let range):
            guard case .int(let number) = value else { throw refusal(collection, path, "is an integer") }
            if let range, !range.contains(number) {
                throw refusal(collection, path, "is from \(range.lowerBound) to \(range.upperBound)")
            }
        case .number:
            guard value.doubleValue != nil else { throw refusal(collection, path, "is a number") }
        case .boolean:
            guard value.boolValue != nil else { throw refusal(collection, path, "is true or false") }
        case .date:
            guard let text = value.stringValue, RFC3339.date(text) != nil else {
                throw refusal(collection, path, "is an RFC 3339 date-time such as 2026-11-25T12:00:00.000Z")
            }
        case .blob:
            guard let fields = value.objectValue, (try? BlobReference(fields: fields)) != nil else {
                throw refusal(collection, path, "is a blob reference")
            }
        case .object(let fields, let otherFields):
            guard let object = value.objectValue else { throw refusal(collection, path, "is an object") }
            try check(object, against: fields, otherFields: otherFields, at: path, in: collection)
        case .array(let element, let maximumCount):
            guard let elements = value.arrayValue else { throw refusal(collection, path, "is an array") }
            guard elements.count <= maximumCount else {
                throw refusal(collection, path, "has at most \(maximumCount) elements", limit: maximumCount)
            }
            for (index, item) in elements.enumerated() {
                try check(item, as: element, at: "\(path)[\(index)]", in: collection)
            }
        case .any(let maximumBytes):
            guard value.jsonBytes.count <= maximumBytes else {
                throw refusal(collection, path, "holds at most \(maximumBytes) bytes", limit: maximumBytes)
            }
        }
    }

    private static func refusal(_ collection: String, _ path: String, _ rule: String, limit: Int? = nil) -> SyncError {
        var details: [String: JSONValue] = ["field": .string(path)]
        if let limit { details["limit"] = .int(Int64(limit)) }
        return SyncError(.validationFailed, "\(collection).\(path) \(rule)", details: .object(details))
    }
}
