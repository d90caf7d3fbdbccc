/// Which forms of Extended JSON a text was seen to use.
public struct ExtendedJSONForms: OptionSet, Sendable, Hashable {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Type wrappers only canonical Extended JSON writes: `$numberInt`, `$numberLong`, a finite
    /// `$numberDouble`, a `$date` of 1970–9999 as `$numberLong`.
    public static let canonical = ExtendedJSONForms(rawValue: 1)
    /// What only relaxed Extended JSON writes: plain JSON numbers, `$date` as text.
    public static let relaxed = ExtendedJSONForms(rawValue: 2)

    /// The form these observations point to.
    public var format: ExtendedJSONFormat {
        switch (contains(.canonical), contains(.relaxed)) {
        case (true, false): .canonical
        case (false, true): .relaxed
        case (true, true): .mixed
        case (false, false): .undetermined
        }
    }
}

/// The form of an Extended JSON export, as detected from its values.
public enum ExtendedJSONFormat: String, Sendable, Hashable {
    case canonical
    case relaxed
    /// Values of both forms (not written by one mongoexport run, but readable all the same).
    case mixed
    /// Nothing seen tells the forms apart (no numbers, no dates).
    case undetermined
}
