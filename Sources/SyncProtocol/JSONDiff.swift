/// The fields that differ between two versions of a body.
///
/// Objects are compared field by field, recursively; arrays and scalars are compared whole,
/// so a changed array is reported by its own path (`conversations`), not its elements.
public enum JSONDiff {
    /// Dot-joined paths whose value is new or different in `after`, and paths present in
    /// `before` but not in `after`, each sorted: the `changedFields` and `removedFields` of
    /// change events.
    public static func paths(from before: [String: JSONValue]?, to after: [String: JSONValue]?) -> (changed: [String], removed: [String]) {
        let (changed, removed) = fields(from: before, to: after)
        return (changed.map { $0.joined(separator: ".") }.sorted(), removed.map { $0.joined(separator: ".") }.sorted())
    }

    /// The same, each path as its field names (a name may itself hold a `.`).
    public static func fields(from before: [String: JSONValue]?, to after: [String: JSONValue]?) -> (changed: [[String]], removed: [[String]]) {
        var changed: [[String]] = []
        var removed: [[String]] = []
        compare(before ?? [:], after ?? [:], prefix: [], changed: &changed, removed: &removed)
        return (changed, removed)
    }

    private static func compare(
        _ before: [String: JSONValue], _ after: [String: JSONValue], prefix: [String], changed: inout [[String]], removed: inout [[String]]
    ) {
        for (field, new) in after {
            let path = prefix + [field]
            guard let old = before[field] else {
                changed.append(path)
                continue
            }
            if case .object(let oldFields) = old, case .object(let newFields) = new {
                compare(oldFields, newFields, prefix: path, changed: &changed, removed: &removed)
            } else if old != new {
                changed.append(path)
            }
        }
        for field in before.keys where after[field] == nil {
            removed.append(prefix + [field])
        }
    }
}
