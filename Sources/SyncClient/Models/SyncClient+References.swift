import SyncProtocol

/// References and typed factories (CouchModel's relationships and model factory) over the
/// local view: the server's objects with the pending writes and this app's drafts on top.
///
/// ```swift
/// let page = try await handle.object(WikiPage.self, id: "w1:Home")
/// let wiki = try await handle.resolve(page!.wiki)            // in the same partition
/// let items = try await handle.models(ModelFactory(Wiki.self, WikiPage.self))
/// ```
extension SyncClient {
    /// The object a reference leads to, found in the open partitions (in `partitions` only,
    /// when given: cheaper when the app knows where it lives); `nil` when none has it.
    public func resolve<T: SyncModel>(_ reference: Reference<T>, in partitions: [Partition]? = nil) throws -> T? {
        let key = try reference.key
        try purgeExpiredNow()
        for partition in try partitions ?? store.openPartitions().map(\.0) {
            // The view of this one key (and of what the partition's pending writes and drafts
            // touch), not of the whole partition.
            if let body = try view(of: partition, drafts: true, keys: [key]).first?.body {
                return try T.decode(body, of: key)
            }
        }
        return nil
    }
}

extension PartitionHandle {
    /// The object a reference leads to, in this partition; `nil` when it has none.
    public func resolve<T: SyncModel>(_ reference: Reference<T>) async throws -> T? {
        try await client.resolve(reference, in: [partition])
    }

    /// The partition's objects whose `type` the factory knows, each decoded as its model.
    public func models(_ factory: ModelFactory) async throws -> [any SyncModel] {
        try factory.models(await objects())
    }
}

extension PartitionSnapshot {
    /// The snapshot's objects whose `type` the factory knows, each decoded as its model.
    public func models(_ factory: ModelFactory) throws -> [any SyncModel] {
        try factory.models(objects)
    }
}
