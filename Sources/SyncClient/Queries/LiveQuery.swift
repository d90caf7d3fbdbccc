import SyncProtocol

/// A live query: the models of one collection of an open partition that match a filter, in
/// a given order, as an `AsyncSequence` of results. The first result is the current one;
/// after it, a result comes only when it differs from the one before (a change elsewhere in
/// the partition, or one that leaves the result as it was, emits nothing). Pending writes
/// count, as everywhere in the local view.
///
/// Each iteration observes the partition on its own, so a query can be iterated more than
/// once; an iteration ends when its task is cancelled or the client stops.
///
/// ```swift
/// let room = try await client.open(RChatPartitions.conversation("c-42"))
/// let mine = room.query(ChatMessage.self, where: { $0.author == "ann@example.com" }, sortedBy: \.timestamp)
/// for try await messages in mine {
///     print(messages.map(\.text))
/// }
/// ```
public struct LiveQuery<Model: SyncModel & Equatable>: AsyncSequence, Sendable {
    public typealias Element = [Model]

    let handle: PartitionHandle
    let isIncluded: @Sendable (Model) -> Bool
    let areInIncreasingOrder: @Sendable (Model, Model) -> Bool

    /// The query's result in one snapshot of the partition.
    public func result(in snapshot: PartitionSnapshot) throws -> [Model] {
        try snapshot.objects(Model.self).filter(isIncluded).sorted(by: areInIncreasingOrder)
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let query: LiveQuery
        var snapshots: AsyncStream<PartitionSnapshot>.AsyncIterator?
        var last: [Model]?

        public mutating func next() async throws -> [Model]? {
            if snapshots == nil { snapshots = await query.handle.updates().makeAsyncIterator() }
            while let snapshot = await snapshots?.next() {
                let result = try query.result(in: snapshot)
                if result != last {
                    last = result
                    return result
                }
            }
            return nil
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(query: self)
    }
}

extension PartitionHandle {
    /// A live query over the models of `type`'s collection: those for which `isIncluded` is
    /// true, ordered by `areInIncreasingOrder`.
    public func query<T: SyncModel & Equatable>(
        _ type: T.Type, where isIncluded: @escaping @Sendable (T) -> Bool = { _ in true },
        sortedBy areInIncreasingOrder: @escaping @Sendable (T, T) -> Bool
    ) -> LiveQuery<T> {
        LiveQuery(handle: self, isIncluded: isIncluded, areInIncreasingOrder: areInIncreasingOrder)
    }

    /// A live query ordered by a property (ties by object id, so the order is stable).
    public func query<T: SyncModel & Equatable, Value: Comparable & Sendable>(
        _ type: T.Type, where isIncluded: @escaping @Sendable (T) -> Bool = { _ in true },
        sortedBy property: any KeyPath<T, Value> & Sendable
    ) -> LiveQuery<T> {
        query(type, where: isIncluded) { a, b in
            let (x, y) = (a[keyPath: property], b[keyPath: property])
            return x == y ? a._id < b._id : x < y
        }
    }
}
