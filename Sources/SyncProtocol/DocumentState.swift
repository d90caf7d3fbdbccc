/// What is stored under an object key at one moment.
public enum DocumentState: Sendable, Hashable {
    /// No object was ever stored under the key.
    case absent
    /// The object was deleted; its tombstone remains.
    case deleted
    /// The object exists with this body.
    case live([String: JSONValue])

    /// The body when live.
    public var body: [String: JSONValue]? {
        if case .live(let body) = self { return body }
        return nil
    }
}

/// The effect of an upload on one object: its state before and after, and the encoded body
/// that is stored.
public struct ObjectChange: Sendable, Hashable {
    public var key: ObjectKey
    public var before: DocumentState
    public var after: DocumentState
    /// The compact JSON of the body after the change; `nil` for a deletion (and for a body
    /// not encoded yet, see ``OperationApplier/apply(_:to:encoding:)``).
    public var encodedBody: [UInt8]?
    /// Whether a `put` rewrote the existing object (rather than only field operations).
    public var replaced: Bool

    public init(key: ObjectKey, before: DocumentState, after: DocumentState, encodedBody: [UInt8]?, replaced: Bool = false) {
        self.key = key
        self.before = before
        self.after = after
        self.encodedBody = encodedBody
        self.replaced = replaced
    }
}
