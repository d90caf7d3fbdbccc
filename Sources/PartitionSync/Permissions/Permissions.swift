import Logging
import SyncProtocol
import SyncStorage

/// Decides who may read and write the partitions of one partition key.
///
/// Rules are registered per key in ``Permissions``; a partition whose key has no rule is
/// denied. A rule may read objects through the context, as RChat's conversation rule reads
/// the user's own User record, and names the partitions its decision depends on so that open
/// subscriptions are checked again when they change.
public protocol PermissionRule: Sendable {
    /// Whether `principal` may subscribe to and pull `partition`.
    func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool
    /// Whether `principal` may upload to `partition`.
    func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool
    /// The partitions whose changes can change the decisions for `principal` on `partition`.
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

/// What a permission rule can read.
public struct PermissionContext: Sendable {
    let store: ObjectStore
    public let logger: Logger

    init(store: ObjectStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// The live object under `key`, or `nil` when it does not exist or is deleted.
    public func object(_ key: ObjectKey) async throws -> SyncObject? {
        try await store.objects([key]).first.flatMap { $0.object.isDeleted ? nil : $0.object }
    }
}

/// Checks each object change of an upload inside its transaction, before it is written;
/// throw `SyncError(.validationFailed, message)` to refuse the whole upload (the way a
/// Couchbase sync function throws `forbidden`).
public protocol WriteValidator: Sendable {
    func validate(_ change: ObjectChange, in partition: Partition, by principal: Principal, context: ValidationContext) async throws
}

/// What a write validator can see: the upload's transaction (reads there see the upload's
/// earlier writes) and the principal.
public struct ValidationContext {
    public let transaction: WriteTransaction
    public let logger: Logger
}

/// The permission module of an application: rules per partition key and write validators.
/// Principals of kind `system` (the server's own triggers) are never checked.
///
/// ```swift
/// var permissions = Permissions()
/// permissions.register(OwnerRule(), forKey: "user")
/// permissions.add(AuthorValidator())
/// ```
public struct Permissions: Sendable {
    private var rules: [String: any PermissionRule] = [:]
    private var validators: [any WriteValidator] = []

    public init() {}

    /// Sets the rule of a partition key, replacing any earlier one.
    public mutating func register(_ rule: any PermissionRule, forKey key: String) {
        rules[key] = rule
    }

    /// Adds a validator run on every upload, after the ones added before it.
    public mutating func add(_ validator: any WriteValidator) {
        validators.append(validator)
    }

    /// The rule of a partition's key, if any.
    public func rule(for partition: Partition) -> (any PermissionRule)? {
        rules[partition.key]
    }

    public func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        if case .system = principal { return true }
        guard let rule = rules[partition.key] else { return false }
        return try await rule.canRead(principal, partition, context: context)
    }

    public func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        if case .system = principal { return true }
        guard let rule = rules[partition.key] else { return false }
        return try await rule.canWrite(principal, partition, context: context)
    }

    public func inputs(of principal: Principal, for partition: Partition) -> [Partition] {
        rules[partition.key]?.inputs(of: principal, for: partition) ?? []
    }

    /// Whether one of `changes` (of an input of the decisions) can change the decisions for
    /// `principal` on `partition`.
    public func decisions(of principal: Principal, on partition: Partition, canChangeWith changes: [ObjectChange]) -> Bool {
        guard let rule = rules[partition.key] else { return false }
        return changes.contains { rule.decisions(of: principal, on: partition, canChangeWith: $0) }
    }

    /// Runs every validator on every change; a validator that throws something other than a
    /// ``SyncError`` is reported as `validation_failed` without its details.
    func validate(_ changes: [ObjectChange], in partition: Partition, by principal: Principal, transaction: WriteTransaction) async throws {
        if case .system = principal { return }
        let context = ValidationContext(transaction: transaction, logger: transaction.logger)
        for change in changes {
            for validator in validators {
                do {
                    try await validator.validate(change, in: partition, by: principal, context: context)
                } catch let error as SyncError {
                    throw error
                } catch {
                    context.logger.error("validator failed", metadata: ["error": "\(error)"])
                    throw SyncError(.validationFailed, "the write could not be validated")
                }
            }
        }
    }
}

/// A rule from closures, for small applications and tests.
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
