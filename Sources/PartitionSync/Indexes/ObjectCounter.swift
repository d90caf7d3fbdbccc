import SyncProtocol

/// A number in an object's body that an application declares a counter: raised often by its
/// triggers (RChat's unread count of each conversation in every member's User record), and
/// kept by the server beside the body, so a raise neither reads nor rewrites the body around
/// it (docs/TRIGGERS.md, "Counters").
///
/// Clients see no difference: every read (a snapshot, a live change, an HTTP read, a trigger's
/// or a rule's read) has the body with its counters laid in, and a client writes a counter as
/// any other field. What a declaration changes:
///
/// - An `increment` by an integer of a counter, in ``TriggerContext/apply(_:)`` (many
///   partitions at once), is written beside the body; any other write of the object writes its
///   body whole, counters included. The outcome of each operation is the same either way.
/// - **A change that only raises counters is not a change event**: no trigger sees it, however
///   it was written. Declare a counter only for a tally nothing reacts to.
/// - A counter is not an index: the server refuses to start on a counter inside a declared
///   index's path (or an index inside a counter's), or a counter inside another.
///
/// ```swift
/// SyncApplication(permissions: permissions, triggers: triggers, indexes: indexes, counters: [
///     .arrayElements(collection: "User", path: "conversations", selectedBy: "id", field: "unreadCount"),
/// ])
/// ```
public struct ObjectCounter: Sendable, Hashable, CustomStringConvertible {
    public let collection: String
    /// Dot-separated field names of letters, digits and `_`: the counter itself, or the array
    /// whose elements hold one each.
    public let path: String
    /// For a counter in each element of an array: the field that selects the element
    /// (`id` in `conversations[id=c-42].unreadCount`) and the counter's path inside it.
    public let element: (selectedBy: String, field: String)?

    /// The number at a path of fields: `Post` at `stats.views` (an `increment` of
    /// `stats.views`).
    public static func field(collection: String, path: String) -> ObjectCounter {
        ObjectCounter(collection: collection, path: path, element: nil)
    }

    /// A number in each element of an array, in the element that an operation's path selects
    /// by a field: `User` at `conversations`, selected by `id`, field `unreadCount` (an
    /// `increment` of `conversations[id=c-42].unreadCount`).
    public static func arrayElements(collection: String, path: String, selectedBy: String, field: String) -> ObjectCounter {
        ObjectCounter(collection: collection, path: path, element: (selectedBy, field))
    }

    private init(collection: String, path: String, element: (selectedBy: String, field: String)?) {
        self.collection = collection
        self.path = path
        self.element = element
    }

    public static func == (lhs: ObjectCounter, rhs: ObjectCounter) -> Bool {
        lhs.collection == rhs.collection && lhs.path == rhs.path && lhs.element?.selectedBy == rhs.element?.selectedBy
            && lhs.element?.field == rhs.element?.field
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(collection)
        hasher.combine(path)
        hasher.combine(element?.selectedBy)
        hasher.combine(element?.field)
    }

    public var description: String {
        guard let element else { return "\(collection).\(path)" }
        return "\(collection).\(path)[\(element.selectedBy)=…].\(element.field)"
    }

    /// One step of where a counter or an index reads: a field name, or every element of an array.
    enum Step: Hashable {
        case field(Substring)
        case elements
    }

    /// Where the counter is, elements of its array as one step.
    var steps: [Step] {
        var steps = path.split(separator: ".").map(Step.field)
        if let element { steps += [.elements] + element.field.split(separator: ".").map(Step.field) }
        return steps
    }

    /// Whether `path` (an operation's) names this counter: its fields, with a selector by the
    /// declared field where the counter is in an array's elements.
    package func matches(_ path: Path) -> Bool {
        var expected = path.components[...]
        func take(_ names: String) -> Bool {
            for name in names.split(separator: ".") {
                guard case .field(let field)? = expected.first, field == name else { return false }
                expected = expected.dropFirst()
            }
            return true
        }
        guard take(self.path) else { return false }
        if let element {
            guard case .match(let field, _)? = expected.first, field == element.selectedBy else { return false }
            expected = expected.dropFirst()
            guard take(element.field) else { return false }
        }
        return expected.isEmpty
    }

    /// Checks the declaration against the others and the declared indexes: `invalid_path`
    /// naming what to change.
    package static func check(_ counters: [ObjectCounter], indexes: [ObjectIndex]) throws(SyncError) {
        for (position, counter) in counters.enumerated() {
            do throws(SyncError) {
                _ = try ObjectKey(collection: counter.collection, id: "x")
                try ObjectIndex.checkPath(counter.path)
                if let element = counter.element {
                    try ObjectIndex.checkPath(element.selectedBy)
                    guard !element.selectedBy.contains(".") else {
                        throw SyncError(.invalidPath, "the field that selects an element is one name")
                    }
                    try ObjectIndex.checkPath(element.field)
                    guard element.field.split(separator: ".").first.map(String.init) != element.selectedBy else {
                        throw SyncError(.invalidPath, "the counter cannot be the field that selects its element")
                    }
                }
                let top = counter.path.split(separator: ".").first.map(String.init)
                guard top != "_id", top != "partition" else {
                    throw SyncError(.invalidPath, "'\(top!)' is set by the server")
                }
                for other in counters[..<position] where other.collection == counter.collection && overlaps(other.steps, counter.steps) {
                    throw SyncError(.invalidPath, "it overlaps the counter \(other.description)")
                }
                for index in indexes where index.collection == counter.collection && overlaps(index.steps, counter.steps) {
                    throw SyncError(.invalidPath, "it overlaps the index at \(index.path): a counter is not indexed")
                }
            } catch {
                throw SyncError(error.code, "the counter \(counter.description) is not valid: \(error.message)")
            }
        }
    }

    /// Whether one place is inside the other (or both are the same).
    private static func overlaps(_ a: [Step], _ b: [Step]) -> Bool {
        zip(a, b).allSatisfy { $0 == $1 }
    }
}

extension ObjectIndex {
    /// Where the index reads: the value at its path (all of it), or one field of every element.
    var steps: [ObjectCounter.Step] {
        let fields = path.split(separator: ".").map(ObjectCounter.Step.field)
        guard case .arrayElements(let field) = kind else { return fields }
        return fields + [.elements] + field.split(separator: ".").map(ObjectCounter.Step.field)
    }
}
