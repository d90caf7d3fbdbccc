import SyncProtocol

/// Decides who may read and write the partitions of one partition key.
///
/// Rules are registered per key in ``Permissions``; a partition whose key has no rule is
/// denied. A rule may read objects through the context, as RChat's conversation rule reads
/// the conversation's membership record. What it reads is recorded: when a partition it read
/// an object in changes, or an object it found absent is created, open subscriptions and
/// write decisions that depend on it are checked again, and a subscription that may no longer
/// read ends with `permission_revoked`.
///
/// What a rule decides on must be data the requesting user cannot forge: a record only the
/// server's triggers write, or a field a ``WriteValidator`` keeps the user from setting.
///
/// ```swift
/// struct RoomRule: PermissionRule {
///     func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
///         guard let email = try await context.email(of: principal) else { return false }
///         let room = try await context.object(Room.self, id: partition.value)
///         return room?.admits(email) ?? false
///     }
///     ...
/// }
/// ```
public protocol PermissionRule: Sendable {
    /// Whether `principal` may subscribe to and pull `partition`.
    func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool
    /// Whether `principal` may upload to `partition`.
    func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool
    /// Partitions whose changes can change the decisions for `principal` on `partition`
    /// beyond what the decision reads through its context (which is recorded without being
    /// declared): say, a partition the rule reads through something other than the context.
    /// When one of them changes, every open subscription that depends on it is checked again
    /// and ended with `permission_revoked` if it may no longer read. Default: none.
    func inputs(of principal: Principal, for partition: Partition) -> [Partition]
    /// Whether `change`, a committed change of one of the inputs, can change the decisions for
    /// `principal` on `partition`. A commit made by this server instance comes with its
    /// changes, and its dependent decisions are checked again only when one of them can
    /// change them (RChat's conversation rule passes over unread counts, which change with
    /// every message); a commit of another instance is always checked. Must be quick: it runs
    /// for every change of an input. Default: `true`.
    func decisions(of principal: Principal, on partition: Partition, canChangeWith change: ObjectChange) -> Bool
}

extension PermissionRule {
    public func inputs(of principal: Principal, for partition: Partition) -> [Partition] { [] }

    public func decisions(of principal: Principal, on partition: Partition, canChangeWith change: ObjectChange) -> Bool { true }
}
