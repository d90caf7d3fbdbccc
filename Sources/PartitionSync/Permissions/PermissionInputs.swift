import Locking
import SyncProtocol

/// Something a permission decision depended on: a partition it read an object in (or that its
/// rule declared with ``PermissionRule/inputs(of:for:)``), or an object it looked for and did
/// not find, whose creation in any partition can change the decision.
public enum PermissionInput: Sendable, Hashable, CustomStringConvertible {
    case partition(Partition)
    case absentObject(ObjectKey)

    public var description: String {
        switch self {
        case .partition(let partition): "\(partition)"
        case .absentObject(let key): "absent \(key)"
        }
    }
}

/// A rule's answer and what it was decided on.
///
/// The inputs are recorded from what the rule read through its ``PermissionContext``, so a
/// rule that reads another partition is checked again when that partition changes whether or
/// not it declares it; declared inputs are added to them.
public struct PermissionDecision: Sendable, Equatable {
    /// Whether the principal may read (or write).
    public var allowed: Bool
    /// What the decision depended on.
    public var inputs: Set<PermissionInput>
    /// For each partition the rule read objects in, the oldest version among the objects it
    /// read there: a commit of that partition after it may have changed what the rule saw.
    public var versionsRead: [Partition: Int64]

    public init(allowed: Bool, inputs: Set<PermissionInput> = [], versionsRead: [Partition: Int64] = [:]) {
        self.allowed = allowed
        self.inputs = inputs
        self.versionsRead = versionsRead
    }
}

/// Collects what a rule reads through its context while it decides.
final class PermissionInputRecorder: Sendable {
    private struct Record {
        var inputs: Set<PermissionInput> = []
        var versionsRead: [Partition: Int64] = [:]
    }

    private let record = Locked(Record())

    /// Notes the answer of a read of `keys`: the partition and version of each live object
    /// found, and the keys found absent (or deleted).
    func read(_ keys: [ObjectKey], found: [(partition: Partition, key: ObjectKey, version: Int64)]) {
        record.withLock { record in
            var absent = Set(keys)
            for object in found {
                absent.remove(object.key)
                record.inputs.insert(.partition(object.partition))
                record.versionsRead[object.partition] = min(record.versionsRead[object.partition] ?? object.version, object.version)
            }
            for key in absent { record.inputs.insert(.absentObject(key)) }
        }
    }

    func decision(_ allowed: Bool, declared: [Partition]) -> PermissionDecision {
        record.withLock { record in
            PermissionDecision(
                allowed: allowed, inputs: record.inputs.union(declared.map(PermissionInput.partition)), versionsRead: record.versionsRead)
        }
    }
}
