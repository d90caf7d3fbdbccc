import SyncProtocol

/// A rule from closures, for small applications and tests.
///
/// ```swift
/// permissions.register(ClosureRule(read: { principal, _, _ in principal.userID != nil }, write: { _, _, _ in false }), for: PartitionKind("news"))
/// ```
public struct ClosureRule: PermissionRule {
    public typealias Decision = @Sendable (Principal, Partition, PermissionContext) async throws -> Bool

    let read: Decision
    let write: Decision
    let dependencies: @Sendable (Principal, Partition) -> [Partition]

    public init(
        read: @escaping Decision, write: @escaping Decision,
        inputs: @escaping @Sendable (Principal, Partition) -> [Partition] = { _, _ in [] }
    ) {
        self.read = read
        self.write = write
        self.dependencies = inputs
    }

    public func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        try await read(principal, partition, context)
    }

    public func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        try await write(principal, partition, context)
    }

    public func inputs(of principal: Principal, for partition: Partition) -> [Partition] {
        dependencies(principal, partition)
    }
}
