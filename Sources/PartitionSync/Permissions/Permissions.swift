import Logging
import SyncProtocol

/// The permission module of an application: rules per partition key, the declared shape and
/// bounds of each collection's documents, and write validators. Principals of kind `system`
/// (the server's own triggers) are never checked.
///
/// ```swift
/// var permissions = Permissions()
/// permissions.register(OwnerRule(), for: PartitionKind("user"))
/// permissions.declare(DocumentSchema(collection: "note", maximumBodyBytes: 4096, fields: [.init("text", .string(maximumLength: 1000))]))
/// permissions.add(AuthorValidator())
/// ```
public struct Permissions: Sendable {
    private var rules: [String: any PermissionRule] = [:]
    private var validators: [any WriteValidator] = []
    private var schemas: [String: DocumentSchema] = [:]
    /// Whether a client's write into a collection without a declared schema is refused
    /// (`validation_failed`): every document users can write is then bounded. Off by default.
    public var refusesUndeclaredCollections = false

    public init() {}

    /// Declares the shape and bounds of a collection's documents, checked on every client
    /// write before the validators (replacing an earlier declaration of the collection).
    public mutating func declare(_ schema: DocumentSchema) {
        schemas[schema.collection] = schema
    }

    /// The declared schema of `collection`, if any.
    public func schema(of collection: String) -> DocumentSchema? {
        schemas[collection]
    }

    /// Sets the rule of a kind of partition, replacing any earlier one.
    public mutating func register(_ rule: any PermissionRule, for kind: PartitionKind) {
        rules[kind.key] = rule
    }

    /// Checks the registrations: `invalid_partition` naming a kind whose key no partition can
    /// have (its rule would never be asked). A server checks this when it starts.
    package func check() throws(SyncError) {
        for kind in rules.keys.sorted().map(PartitionKind.init) where !kind.isValid {
            throw SyncError(.invalidPartition, "a rule is registered for \"\(kind.key)\", which no partition key can be: keys match [a-z][a-z0-9_-]{0,63}")
        }
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

    /// Whether `principal` may read `partition`, with what the decision read and the rule's
    /// declared inputs: the server checks it again when one of them changes.
    package func decideRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> PermissionDecision {
        try await decide(principal, partition, context: context) { rule, context in
            try await rule.canRead(principal, partition, context: context)
        }
    }

    /// Whether `principal` may write to `partition`, with what the decision depended on.
    package func decideWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> PermissionDecision {
        try await decide(principal, partition, context: context) { rule, context in
            try await rule.canWrite(principal, partition, context: context)
        }
    }

    private func decide(
        _ principal: Principal, _ partition: Partition, context: PermissionContext,
        _ ask: (any PermissionRule, PermissionContext) async throws -> Bool
    ) async throws -> PermissionDecision {
        if case .system = principal { return PermissionDecision(allowed: true) }
        guard let rule = rules[partition.key] else { return PermissionDecision(allowed: false) }
        let recorder = PermissionInputRecorder()
        let allowed = try await ask(rule, context.recording(into: recorder))
        return recorder.decision(allowed, declared: rule.inputs(of: principal, for: partition))
    }

    /// The partitions `partition`'s rule declares as the inputs of its decisions for
    /// `principal` (``PermissionRule/inputs(of:for:)``); the server adds what each decision reads.
    public func inputs(of principal: Principal, for partition: Partition) -> [Partition] {
        rules[partition.key]?.inputs(of: principal, for: partition) ?? []
    }

    /// Whether one of `changes` (of an input of the decisions) can change the decisions for
    /// `principal` on `partition`.
    public func decisions(of principal: Principal, on partition: Partition, canChangeWith changes: [ObjectChange]) -> Bool {
        guard let rule = rules[partition.key] else { return false }
        return changes.contains { rule.decisions(of: principal, on: partition, canChangeWith: $0) }
    }

    /// Checks every change against its collection's schema, then runs every validator on it; a
    /// validator that throws something other than a
    /// ``SyncError`` is reported as `validation_failed` without its details.
    package func validate(
        _ changes: [ObjectChange], in partition: Partition, by principal: Principal, transaction: any ObjectReading, logger: Logger
    ) async throws {
        if case .system = principal { return }
        let context = ValidationContext(source: transaction, logger: logger)
        for change in changes {
            try await check(change, in: partition, by: principal, context: context)
        }
    }

    /// Checks one change of an upload as the server does before it commits: against its
    /// collection's declared schema, then through every validator in order. Throws the
    /// ``SyncError`` the client would get (`validation_failed` for a validator that throws
    /// anything else). An application's tests call it with a context on the test kit's
    /// `InMemoryObjects`.
    public func check(_ change: ObjectChange, in partition: Partition, by principal: Principal, context: ValidationContext) async throws {
        if case .system = principal { return }
        if let body = change.after.body {
            if let schema = schemas[change.key.collection] {
                try schema.check(body, before: change.before.body, encodedSize: change.encodedBody?.count)
            } else if refusesUndeclaredCollections {
                throw SyncError(
                    .validationFailed, "\(change.key.collection) is not a collection of this application",
                    details: ["field": ""])
            }
        }
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
