import Foundation
import SyncProtocol

/// How binary data (any subtype but the UUIDs) becomes JSON, per collection and field: stored
/// as a blob, where the caller receives the bytes and returns the JSON to put in their place
/// (typically a blob reference, `{"@blob": "sha256:…", "length": …, "contentType": …}`), or
/// written inline as base64 text. The first rule that matches decides; else ``fallback``.
public struct BinaryPolicy: Sendable {
    public struct Rule: Sendable {
        /// The collection; `nil` for every collection.
        public var collection: String?
        public var field: FieldPattern
        public var treatment: BinaryTreatment

        public init(collection: String?, field: FieldPattern, treatment: BinaryTreatment) {
            self.collection = collection
            self.field = field
            self.treatment = treatment
        }
    }

    public var rules: [Rule]
    public var fallback: BinaryTreatment

    public init(rules: [Rule] = [], fallback: BinaryTreatment = .base64) {
        self.rules = rules
        self.fallback = fallback
    }

    /// This policy with one more rule (after the others).
    public func storing(_ field: FieldPattern, in collection: String? = nil, as treatment: BinaryTreatment) -> BinaryPolicy {
        var copy = self
        copy.rules.append(Rule(collection: collection, field: field, treatment: treatment))
        return copy
    }

    public func treatment(collection: String, path: FieldPath) -> BinaryTreatment {
        for rule in rules where (rule.collection == nil || rule.collection == collection) && rule.field.matches(path) {
            return rule.treatment
        }
        return fallback
    }
}

/// One way of turning binary data into JSON.
public enum BinaryTreatment: Sendable {
    /// Standard base64 text with padding.
    case base64
    /// The closure receives the bytes (``BinaryField``) and returns the JSON to store in
    /// their place; it may keep the bytes to upload them as a blob.
    case blob(@Sendable (BinaryField) throws -> JSONValue)

    static func base64Text(_ bytes: [UInt8]) -> JSONValue {
        .string(Data(bytes).base64EncodedString())
    }
}

/// Binary data being mapped, and where it is.
public struct BinaryField: Sendable {
    public var collection: String
    public var documentID: BSONValue?
    public var path: FieldPath
    public var binary: BSONBinary

    public init(collection: String, documentID: BSONValue?, path: FieldPath, binary: BSONBinary) {
        self.collection = collection
        self.documentID = documentID
        self.path = path
        self.binary = binary
    }
}
