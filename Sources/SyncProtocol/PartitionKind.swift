/// A kind of partition, named by its key (`room` in `room=r1`): declared once by an
/// application, then used to make its partitions, to register its permission rule and to tell
/// a partition's kind, where strings would be matched by hand.
///
/// ```swift
/// extension PartitionKind {
///     static let room = PartitionKind("room")
/// }
/// let partition = try PartitionKind.room("r1")            // room=r1
/// permissions.register(RoomRule(), for: .room)
/// switch (partition.kind, change.key.collection) {
/// case (.room, Chat.collection): ...
/// default: ...
/// }
/// ```
///
/// Declaring one cannot fail; a key that is not `[a-z][a-z0-9_-]{0,63}` makes no partition
/// (`invalid_partition`), and a server refuses to start with a rule registered for one.
public struct PartitionKind: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let key: String

    public init(_ key: String) {
        self.key = key
    }

    /// The partition of this kind with `value`; `invalid_partition` when the value (or the
    /// key) is malformed.
    public func callAsFunction(_ value: String) throws(SyncError) -> Partition {
        try Partition(key: key, value: value)
    }

    /// The value of `partition` when it is of this kind, else `nil`.
    public func value(of partition: Partition) -> String? {
        partition.key == key ? partition.value : nil
    }

    /// Whether the key is one a partition can have.
    public var isValid: Bool { Partition.isValidKey(key) }

    public var description: String { key }

    public static func < (lhs: PartitionKind, rhs: PartitionKind) -> Bool {
        lhs.key < rhs.key
    }
}

extension Partition {
    /// The partition's kind (its key).
    public var kind: PartitionKind { PartitionKind(key) }
}
