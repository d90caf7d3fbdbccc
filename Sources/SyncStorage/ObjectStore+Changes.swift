import Foundation
import PostgresNIO
import SyncProtocol

extension ObjectStore {
    /// One page of a partition, in (version, collection, id) order.
    ///
    /// With `cursor` nil, or a cursor this database cannot continue from (foreign epoch,
    /// ahead of the partition, or older than pruned tombstones), the page starts a full
    /// snapshot and has `reset` set. The snapshot leaves out tombstones of deletions that
    /// happened before it started; it reads in bounded pages, each its own short query, and
    /// is consistent once a page has `upToDate`, because objects changed meanwhile move to
    /// higher versions that later pages include.
    public func changes(in partition: Partition, after cursor: Cursor?, limit: Int? = nil) async throws -> ChangeBatch {
        let page = try await changePage(in: partition, after: cursor, limit: limit) { key, version, body in
            // Stored bodies were checked against the limits on the way in; the parser's own
            // nesting limit here only guards against a corrupted or hand-edited row.
            SyncObject(key: key, version: version, body: try body.map { try JSONParser(maximumDepth: 512).parse($0) }?.objectValue)
        }
        return ChangeBatch(
            partition: partition, objects: page.objects, cursor: page.cursor, upToDate: page.upToDate, reset: page.reset,
            version: page.version)
    }

    /// The same page as ``changes(in:after:limit:)``, with every object already in its wire
    /// form: the stored JSON text goes to the message as it is, never decoded. What sessions
    /// send.
    public func encodedChanges(in partition: Partition, after cursor: Cursor?, limit: Int? = nil) async throws -> EncodedChangeBatch {
        let page = try await changePage(in: partition, after: cursor, limit: limit) { key, version, body in
            EncodedChangeBatch.Object(key: key, version: version, bodyText: body)
        }
        return EncodedChangeBatch(
            partition: partition, objects: page.objects, cursor: page.cursor, upToDate: page.upToDate, reset: page.reset,
            version: page.version)
    }

    private func changePage<Object: PageObject>(
        in partition: Partition, after cursor: Cursor?, limit: Int?,
        object: (ObjectKey, Int64, UnsafeRawBufferPointer?) throws -> Object
    ) async throws -> Page<Object> {
        let epoch = try await epoch()
        let limit = min(max(limit ?? configuration.defaultPageSize, 1), configuration.maximumPageSize)
        let snapshotStart = CursorPosition(epoch: epoch, version: 0)
        guard let cursor else {
            return try await page(partition, from: snapshotStart, limit: limit, reset: true, object: object)
        }
        guard let position = CursorPosition(cursor), position.epoch == epoch else {
            return try await page(partition, from: snapshotStart, limit: limit, reset: true, object: object)
        }
        let batch = try await page(partition, from: position, limit: limit, reset: false, object: object)
        if batch.reset {
            // The cursor is ahead of the partition or behind its pruned tombstones.
            return try await page(partition, from: snapshotStart, limit: limit, reset: true, object: object)
        }
        return batch
    }

    /// Pages from `cursor` until one is up to date: a whole snapshot or catch-up, one bounded
    /// page at a time, as the consumer asks for them.
    public func changeFeed(in partition: Partition, after cursor: Cursor?, limit: Int? = nil) -> ChangeFeed {
        ChangeFeed(store: self, partition: partition, cursor: cursor, limit: limit)
    }

    /// Reads one page. A result with `reset` and no `reset` requested means `position`
    /// cannot be continued from.
    private func page<Object: PageObject>(
        _ partition: Partition, from position: CursorPosition, limit: Int, reset: Bool,
        object: (ObjectKey, Int64, UnsafeRawBufferPointer?) throws -> Object
    ) async throws -> Page<Object> {
        // Tombstones at or below the floor are left out. A snapshot's first page takes the
        // head of the same statement as its floor; later pages carry it in the cursor; a
        // catch-up from a cursor sends every tombstone after it (floor 0).
        let floor: Int64? = reset && position.tombstoneFloor == nil ? nil : (position.tombstoneFloor ?? 0)
        // One statement, so the head version and the rows come from one snapshot: the head
        // returned is exactly the version the rows are complete up to.
        // The query is the function of migration 0005, planned so that it always walks the
        // partition's index in order.
        let rows = try await client.query(
            """
            SELECT * FROM psync_page(\(partition.description), \(position.version), \(position.after?.collection)::text,
                                     \(position.after?.id)::text, \(floor)::bigint, \(limit + 1))
            """, logger: logger)
        var head: Int64 = 0
        var prunedThrough: Int64 = 0
        var objects: [Object] = []
        objects.reserveCapacity(min(limit + 1, 1024))
        for try await (version, pruned, collection, id, objectVersion, body)
            in rows.decode((Int64, Int64, String?, String?, Int64?, ByteBuffer?).self)
        {
            head = version
            prunedThrough = pruned
            if let collection, let id, let objectVersion {
                let key = ObjectKey(uncheckedCollection: collection, id: id)
                if let body {
                    objects.append(try JSONB.withText(of: body) { try object(key, objectVersion, $0) })
                } else {
                    objects.append(try object(key, objectVersion, nil))
                }
            }
        }
        if !reset, position.version > head || position.version < prunedThrough {
            return Page(objects: [], cursor: position.cursor, upToDate: false, reset: true)
        }
        if objects.count > limit {
            objects.removeLast(objects.count - limit)
            let last = objects[objects.count - 1]
            let snapshotFloor = floor ?? head
            let next = CursorPosition(
                epoch: position.epoch, version: last.version, after: last.key,
                tombstoneFloor: snapshotFloor > 0 && last.version <= snapshotFloor ? snapshotFloor : nil)
            return Page(objects: objects, cursor: next.cursor, upToDate: false, reset: reset)
        }
        let end = CursorPosition(epoch: position.epoch, version: max(head, position.version))
        return Page(objects: objects, cursor: end.cursor, upToDate: true, reset: reset, version: end.version)
    }
}

/// An object of a page, however it is represented.
protocol PageObject {
    var key: ObjectKey { get }
    var version: Int64 { get }
}

extension SyncObject: PageObject {}
extension EncodedChangeBatch.Object: PageObject {}

/// One page of a partition, before it becomes a batch.
struct Page<Object> {
    var objects: [Object]
    var cursor: Cursor
    var upToDate: Bool
    var reset: Bool
    var version: Int64? = nil
}

/// The pages of a partition from a cursor until one is up to date, read one query per page
/// as the consumer iterates, so memory stays bounded by the page size whatever the partition
/// holds.
public struct ChangeFeed: AsyncSequence, Sendable {
    public typealias Element = ChangeBatch

    let store: ObjectStore
    let partition: Partition
    let cursor: Cursor?
    let limit: Int?

    public struct AsyncIterator: AsyncIteratorProtocol {
        let store: ObjectStore
        let partition: Partition
        var cursor: Cursor?
        let limit: Int?
        var finished = false

        public mutating func next() async throws -> ChangeBatch? {
            guard !finished else { return nil }
            let batch = try await store.changes(in: partition, after: cursor, limit: limit)
            cursor = batch.cursor
            finished = batch.upToDate
            return batch
        }
    }

    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(store: store, partition: partition, cursor: cursor, limit: limit)
    }
}
