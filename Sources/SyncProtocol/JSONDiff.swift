/// The field paths that differ between two versions of a body, for change events.
///
/// Objects are compared field by field, recursively; arrays and scalars are compared whole,
/// so a changed array is reported by its own path (`conversations`), not its elements.
public enum JSONDiff {
    /// Paths whose value is new or different in `after`, and paths present in `before` but
    /// not in `after`, each sorted.
    public static func paths(from before: [String: JSONValue]?, to after: [String: JSONValue]?) -> (changed: [String], removed: [String]) {
        var changed: [String] = []
        var removed: [String] = []
        compare(before ?? [:], after ?? [:], prefix: "", changed: &changed, removed: &removed)
        return (changed.sorted(), removed.sorted())
    }

    private static func compare(
        _ before: [String: JSONValue], _ after: [String: JSONValue], prefix: String, changed: inout [String], removed: inout [String]
    ) {
        for (field, new) in after {
            let path = prefix.isEmpty ? field : prefix + "." + field
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
            removed.append(prefix.isEmpty ? field : prefix + "." + field)
        }
    }
}
