import PartitionSync

/// `wiki=W`: read and written by wiki W's owner and members, exactly while its document lists
/// them. Only the owner changes the members (``TouchWikiValidator``), so nobody lets
/// themselves in. A wiki that does not exist yet may be written (to create it: the validator
/// takes only a wiki document naming the writer as its owner), not read. When the wiki
/// document changes whom it admits, open subscriptions are checked again, and a member removed
/// loses theirs with `permission_revoked`.
struct WikiRule: PermissionRule {
    func canRead(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        guard let name = try await context.emailName(of: principal) else { return false }
        return try await context.object(Wiki.self, id: partition.value)?.admits(name) ?? false
    }

    func canWrite(_ principal: Principal, _ partition: Partition, context: PermissionContext) async throws -> Bool {
        guard let name = try await context.emailName(of: principal) else { return false }
        guard let wiki = try await context.object(Wiki.self, id: partition.value) else { return true }
        return wiki.admits(name)
    }

    func inputs(of principal: Principal, for partition: Partition) -> [Partition] {
        [partition]
    }

    /// Only a change of the wiki document itself, and of whom it admits.
    func decisions(of principal: Principal, on partition: Partition, canChangeWith change: ObjectChange) -> Bool {
        guard change.key.collection == Wiki.collection, change.key.id == partition.value else { return false }
        return Self.admitted(change.before.body) != Self.admitted(change.after.body)
    }

    /// The owner and members in a stored wiki body (raw: this runs for every change of the wiki).
    private static func admitted(_ body: [String: JSONValue]?) -> Set<String> {
        let names = [body?["owner_id"]].compactMap { $0 } + (body?["members"]?.arrayValue ?? [])
        return Set(names.compactMap(\.stringValue))
    }
}
