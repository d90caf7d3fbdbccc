import SyncProtocol

/// A partition that belongs to one user: `user=<userId>` may be read and written by that
/// user only. Services and other users are refused.
public struct OwnerRule: PermissionRule {
    public init() {}

    public func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        principal.userID == partition.value
    }

    public func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        principal.userID == partition.value
    }
}
