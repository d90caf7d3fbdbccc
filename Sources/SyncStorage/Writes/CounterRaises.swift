import PartitionSync
import SyncProtocol

/// The raises of declared counters (``ObjectCounter``) among a many-partition apply's
/// operations, and what becomes of each: written beside the body, or applied to the whole body
/// as any other operation. Pure: the reads and writes are ``WriteTransaction/apply(_:)``'s.
///
/// An object is raised apart when every one of its operations in the apply is an `increment`
/// by an integer of a declared counter; any other operation on it keeps all of its operations
/// with the body (``rest``), in their order.
struct CounterRaises {
    /// One counter of one object, and the increments of it in the order given.
    struct Counter: Equatable {
        var path: Path
        var increments: [Int64]
    }

    /// One object raised apart: its counters in the order first raised.
    struct Object: Equatable {
        var partition: Partition
        var key: ObjectKey
        var counters: [Counter]
    }

    /// What the database says of one counter of an object (``WriteStatements/ReadCounters``).
    struct Reading: Equatable {
        var partition: String
        var live: Bool
        /// How many counters the object keeps beside its body, and whether this one is among them.
        var kept: Int
        var isKept: Bool
        /// Where the path leads in the body; `nil`: nowhere.
        var place: [String]?
        /// The value there; `nil`: the field is missing.
        var value: JSONValue?
    }

    /// What to write for an object raised apart: its new counters, merged over those it keeps.
    struct Entry: Equatable {
        var partition: Partition
        var key: ObjectKey
        /// `{"<path>": [[<place>], <value>]}`
        var counters: [String: JSONValue]
    }

    /// The objects raised apart, by partition in sorted order, each partition's in key order.
    private(set) var objects: [Object] = []
    /// Every other operation, by partition.
    private(set) var rest: [Partition: [SyncOperation]] = [:]

    init(_ operations: [Partition: [SyncOperation]], counters declared: [ObjectCounter]) {
        var byCollection: [String: [ObjectCounter]] = [:]
        for counter in declared { byCollection[counter.collection, default: []].append(counter) }
        for partition in operations.keys.sorted() {
            let list = operations[partition]!
            var raised: [ObjectKey: [Counter]] = [:]
            var whole: Set<ObjectKey> = []
            for operation in list {
                let key = operation.key
                guard !whole.contains(key) else { continue }
                guard case .increment(_, let path, .int(let by)) = operation,
                    byCollection[key.collection]?.contains(where: { $0.matches(path) }) == true
                else {
                    whole.insert(key)
                    raised[key] = nil
                    continue
                }
                var counters = raised[key] ?? []
                if let index = counters.firstIndex(where: { $0.path == path }) {
                    counters[index].increments.append(by)
                } else {
                    counters.append(Counter(path: path, increments: [by]))
                }
                raised[key] = counters
            }
            let others = list.filter { raised[$0.key] == nil }
            if !others.isEmpty { rest[partition] = others }
            for key in raised.keys.sorted() { objects.append(Object(partition: partition, key: key, counters: raised[key]!)) }
        }
    }

    var isEmpty: Bool { objects.isEmpty }

    /// The operations of `objects` (indexes into ``objects``) as they were given, by partition.
    func operations(of indexes: [Int]) -> [Partition: [SyncOperation]] {
        var result: [Partition: [SyncOperation]] = [:]
        for index in indexes {
            let object = objects[index]
            for counter in object.counters {
                for by in counter.increments {
                    result[object.partition, default: []].append(.increment(object.key, path: counter.path, by: .int(by)))
                }
            }
        }
        return result
    }

    /// The steps of a counter's path as `psync_counter_at` takes them: field names as strings,
    /// selectors as `{"f": field, "v": value}`.
    static func steps(of path: Path) -> JSONValue {
        .array(path.components.map { component in
            switch component {
            case .field(let name): .string(name)
            case .match(let field, let value): .object(["f": .string(field), "v": .string(value)])
            case .index(let position): .int(Int64(position))
            }
        })
    }

    /// Decides each object on what the database says of its counters (`readings[i][j]`: the
    /// j-th counter of the i-th object; `nil` when the object is not stored): raised apart with
    /// the entries to write, or applied to the whole body (by index into ``objects``), which
    /// then answers as the operations do, with their errors. An object is applied whole when it
    /// is not stored, not live or in another partition, when a path leads nowhere or to a value
    /// other than an integer (or to none: the increment creates the field), when an increment
    /// overflows, or when it would keep more than `limit` counters. An object whose increments
    /// change nothing is neither (no write, as an operation that leaves an object as it was).
    static func decide(_ objects: [Object], readings: [[Reading?]], limit: Int) -> (entries: [Entry], whole: [Int]) {
        var entries: [Entry] = []
        var whole: [Int] = []
        objects: for (index, object) in objects.enumerated() {
            let read = readings[index]
            guard read.allSatisfy({ $0 != nil }), let first = read.first ?? nil, first.partition == object.partition.description,
                first.live, limit > 0
            else {
                whole.append(index)
                continue
            }
            var counters: [String: JSONValue] = [:]
            var kept = first.kept
            for (counter, reading) in zip(object.counters, read.map { $0! }) {
                guard let place = reading.place else {
                    whole.append(index)
                    continue objects
                }
                var value: Int64
                switch reading.value {
                case nil: value = 0
                case .int(let stored)?: value = stored
                default:
                    whole.append(index)
                    continue objects
                }
                let before = value
                for by in counter.increments {
                    let (sum, overflow) = value.addingReportingOverflow(by)
                    guard !overflow else {
                        whole.append(index)
                        continue objects
                    }
                    value = sum
                }
                // A field the increment creates is a change even at 0.
                guard value != before || reading.value == nil else { continue }
                if !reading.isKept { kept += 1 }
                counters[counter.path.description] = .array([.array(place.map(JSONValue.string)), .int(value)])
            }
            guard kept <= limit else {
                whole.append(index)
                continue
            }
            if !counters.isEmpty { entries.append(Entry(partition: object.partition, key: object.key, counters: counters)) }
        }
        return (entries, whole)
    }
}
