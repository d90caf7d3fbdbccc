import SyncProtocol

/// The caller's choices for the values whose JSON form is a decision rather than a fact
/// (docs/MIGRATING.md, "Types"): binary data, legacy UUIDs, non-finite doubles, and the
/// values refused by default.
public struct ImportPolicy: Sendable {
    /// Binary data other than UUIDs, by collection and field. Default: base64 text.
    public var binary: BinaryPolicy
    /// Binary subtype 3. Default: refused (the bytes do not say their driver's byte order).
    public var legacyUUIDs: LegacyUUIDTreatment
    /// `NaN`, `Infinity`, `-Infinity`. Default: refused (JSON has no such numbers).
    public var nonFiniteDoubles: NonFiniteDoubleTreatment
    /// Called for every value the mapping refuses (dates outside 0001–9999, non-finite doubles
    /// and legacy UUIDs when their treatment is `.refuse`, a UUID that is not 16 bytes,
    /// Timestamp, regular expressions, MinKey, MaxKey, JavaScript, DBPointer), with the
    /// collection and field, so that a caller decides field by field: returns the JSON to
    /// store, or `nil` to refuse it. Default: always `nil`. Throwing refuses it too, with the
    /// thrown error's text.
    public var fallback: @Sendable (FieldValue) throws -> JSONValue?

    public init(
        binary: BinaryPolicy = BinaryPolicy(), legacyUUIDs: LegacyUUIDTreatment = .refuse,
        nonFiniteDoubles: NonFiniteDoubleTreatment = .refuse,
        fallback: @escaping @Sendable (FieldValue) throws -> JSONValue? = { _ in nil }
    ) {
        self.binary = binary
        self.legacyUUIDs = legacyUUIDs
        self.nonFiniteDoubles = nonFiniteDoubles
        self.fallback = fallback
    }

    /// The fallback that keeps every value refused by default as its canonical Extended JSON
    /// (`{"$timestamp": {"t": 1, "i": 2}}`): nothing lost, nothing interpreted.
    public static let keepExtendedJSON: @Sendable (FieldValue) throws -> JSONValue? = { $0.value.canonicalExtendedJSON }
}

/// A value being mapped, and where it is: what the policy's closures receive.
public struct FieldValue: Sendable {
    public var collection: String
    /// The document's `_id`, when it has one.
    public var documentID: BSONValue?
    public var path: FieldPath
    public var value: BSONValue

    public init(collection: String, documentID: BSONValue?, path: FieldPath, value: BSONValue) {
        self.collection = collection
        self.documentID = documentID
        self.path = path
        self.value = value
    }
}

/// What to do with binary subtype 3.
public enum LegacyUUIDTreatment: Sendable, Hashable {
    case refuse
    /// A UUID string, reading the bytes in this driver's order.
    case uuid(LegacyUUIDByteOrder)
    /// Binary data like any other (``BinaryPolicy``).
    case binary
}

/// What to do with a double that is `NaN` or infinite.
public enum NonFiniteDoubleTreatment: Sendable, Hashable {
    case refuse
    /// The strings `"NaN"`, `"Infinity"`, `"-Infinity"` (Extended JSON's spelling).
    case string
    case null
}
