/// How many values of each BSON type that JSON does not have as such an import converted
/// (`ObjectId`, `Date`, `Int64`, `Decimal128`, `Binary (subtype 00)` …), for the report. The
/// types JSON has (strings, Int32, finite doubles, booleans, null, documents, arrays) are not
/// conversions and are not counted. Pure.
public struct ConversionTally: Sendable, Hashable {
    /// Count per type name (``BSONValue/typeName``).
    public private(set) var counts: [String: Int] = [:]

    public init() {}

    /// Counts the converted values of `document`, nested ones included.
    public mutating func count(_ document: BSONDocument) {
        for field in document.fields { count(field.value) }
    }

    mutating func count(_ value: BSONValue) {
        switch value {
        case .document(let document): count(document)
        case .array(let elements): for element in elements { count(element) }
        case .string, .int32, .bool, .null: break
        case .double(let number) where number.isFinite: break
        default: counts[value.typeName, default: 0] += 1
        }
    }

    /// Adds another tally's counts.
    public mutating func add(_ other: ConversionTally) {
        counts.merge(other.counts, uniquingKeysWith: +)
    }
}
