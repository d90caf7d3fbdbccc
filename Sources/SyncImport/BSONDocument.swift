/// A BSON document: its fields in order. Field names may repeat in BSON; ``JSONMapper``
/// refuses a document that repeats one (a JSON object cannot hold both).
///
/// Documents read from Extended JSON have their fields in the order of the project's JSON
/// parser (which does not keep it); JSON objects are unordered, so the imported bodies are
/// the same.
public struct BSONDocument: Hashable, Sendable {
    public struct Field: Hashable, Sendable {
        public var name: String
        public var value: BSONValue

        public init(_ name: String, _ value: BSONValue) {
            self.name = name
            self.value = value
        }
    }

    public var fields: [Field]

    public init(_ fields: [Field] = []) {
        self.fields = fields
    }

    /// The value of the first field named `name`.
    public subscript(name: String) -> BSONValue? {
        fields.first { $0.name == name }?.value
    }

    public var isEmpty: Bool { fields.isEmpty }
    public var count: Int { fields.count }
}

extension BSONDocument: ExpressibleByDictionaryLiteral {
    public init(dictionaryLiteral elements: (String, BSONValue)...) {
        self.init(elements.map { Field($0.0, $0.1) })
    }
}
