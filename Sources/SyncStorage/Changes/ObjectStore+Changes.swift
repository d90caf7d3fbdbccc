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
    ///
    /// With `target` (``readTarget()``), the page may come from a streaming replica that has
    /// replayed the primary's WAL that far; otherwise it is read from the primary.
    package func changes(in partition: Partition, after cursor: Cursor?, limit: Int? = nil, target: ReadTarget? = nil) async throws -> ChangeBatch {
        // A cursor from a client: one this server did not hand out starts a snapshot.
        let page = try await changePage(in: partition, from: cursor.flatMap(CursorPosition.init), limit: limit) { position, limit, floor in
            try await self.rows(partition, from: position, limit: limit, floor: floor, target: target) { key, version, body in
                // Stored bodies were checked against the limits on the way in; the parser's own
                // nesting limit here only guards against a corrupted or hand-edited row.
                SyncObject(key: key, version: version, body: try body.map { try JSONParser(maximumDepth: 512).parse($0) }?.objectValue)
            }
        }
        return ChangeBatch(
            partition: partition, objects: page.objects, cursor: page.end.cursor, upToDate: page.upToDate, reset: page.reset,
            version: page.version)
    }

    /// The same page as ``changes(in:after:limit:)``, with every object already in its wire
    /// form: the stored JSON text goes to the message as it is, never decoded. One object at
    /// a time, so a reader can send some of them (the live feeds, whose members may be at
    /// different places in a commit). Read from a position (`nil`: a snapshot); the page
    /// says where it ends as a position too, its cursor being only for the wire.
    package func encodedChanges(in partition: Partition, from position: CursorPosition?, limit: Int? = nil) async throws -> PositionedPage {
        let page = try await changePage(in: partition, from: position, limit: limit) { position, limit, floor in
            try await self.rows(partition, from: position, limit: limit, floor: floor) { key, version, body in
                EncodedChangeBatch.Object(key: key, version: version, bodyText: body)
            }
        }
        let batch = EncodedChangeBatch(
            partition: partition, objects: page.objects, cursor: page.end.cursor, upToDate: page.upToDate, reset: page.reset,
            version: page.version)
        return PositionedPage(batch: batch, end: page.end, history: (page.head, page.history))
    }

    /// The same page as ``encodedChanges(in:from:limit:)``, its objects written one after
    /// the other into one buffer as they are read: what a session sends for a snapshot or
    /// catch-up, where a page goes out whole. No object of its own per row, no key strings but
    /// the last. With `target`, it may come from a replica, as in ``changes(in:after:limit:target:)``.
    package func encodedPage(in partition: Partition, from position: CursorPosition?, limit: Int? = nil, target: ReadTarget? = nil) async throws
        -> PositionedPage
    {
        let page = try await changePage(in: partition, from: position, limit: limit) { position, limit, floor -> PageRead<(bytes: [UInt8], count: Int)> in
            var json: [UInt8] = []
            let found = try await self.walk(partition, from: position, limit: limit, floor: floor, target: target) { collection, id, version, body in
                let first = json.isEmpty
                if !first { json.append(UInt8(ascii: ",")) }
                EncodedChangeBatch.Object.write(collection: collection, id: id, version: version, bodyText: body, to: &json)
                // Room for a page of objects like the first (up to 4 MiB), so the buffer is
                // not grown and copied a dozen times.
                if first { json.reserveCapacity(min((json.count + 1) * limit + 64, 4 << 20)) }
            }
            return found.with(objects: (json, found.objects))
        }
        let batch = EncodedChangeBatch(
            partition: partition, objectsJSON: page.objects.bytes, objectCount: page.objects.count, cursor: page.end.cursor,
            upToDate: page.upToDate, reset: page.reset, version: page.version)
        return PositionedPage(batch: batch, end: page.end, history: (page.head, page.history))
    }

    /// What a snapshot or catch-up about to start asks its pages to include when they are read
    /// from a replica: the primary's WAL position now (``ReadReplicas/target()``); `nil` when no
    /// replica is in use, and the pages are read from the primary.
    package func readTarget() async throws -> ReadTarget? {
        try await replicas?.target()
    }

    /// The snapshot and cursor logic around one read of a page (`read(position, limit, floor)`):
    /// from `start`, or from a snapshot's beginning when there is none or it belongs to another
    /// database (a restored or replaced one: another epoch).
    private func changePage<Objects>(
        in partition: Partition, from start: CursorPosition?, limit: Int?,
        read: (CursorPosition, Int, Int64?) async throws -> PageRead<Objects>
    ) async throws -> Page<Objects> {
        let epoch = try await epoch()
        let limit = min(max(limit ?? configuration.defaultPageSize, 1), configuration.maximumPageSize)
        let snapshotStart = CursorPosition(epoch: epoch, version: 0)
        guard let position = start, position.epoch == epoch else {
            return try await page(from: snapshotStart, limit: limit, reset: true, read: read)
        }
        let batch = try await page(from: position, limit: limit, reset: false, read: read)
        if batch.reset {
            // The cursor is ahead of the partition or behind its pruned tombstones.
            return try await page(from: snapshotStart, limit: limit, reset: true, read: read)
        }
        return batch
    }

    /// Pages from `cursor` until one is up to date: a whole snapshot or catch-up, one bounded
    /// page at a time, as the consumer asks for them.
    package func changeFeed(in partition: Partition, after cursor: Cursor?, limit: Int? = nil) -> ChangeFeed {
        ChangeFeed(store: self, partition: partition, cursor: cursor, limit: limit)
    }

    /// Reads one page. A result with `reset` and no `reset` requested means `position`
    /// cannot be continued from.
    private func page<Objects>(
        from position: CursorPosition, limit: Int, reset: Bool,
        read: (CursorPosition, Int, Int64?) async throws -> PageRead<Objects>
    ) async throws -> Page<Objects> {
        // Tombstones at or below the floor are left out. A snapshot's first page takes the
        // head of the same statement as its floor; later pages carry it in the cursor; a
        // catch-up from a cursor sends every tombstone after it (floor 0).
        let floor: Int64? = reset && position.tombstoneFloor == nil ? nil : (position.tombstoneFloor ?? 0)
        let found = try await read(position, limit, floor)
        // A cursor ahead of the partition, or from commits this history does not have (a lost
        // tail, PartitionHistory), or behind pruned tombstones.
        if !reset,
            !found.history.contains(version: position.version, timeline: position.timeline, head: found.head)
                || Self.needsPruned(position, prunedThrough: found.prunedThrough)
        {
            return Page(objects: found.objects, end: position, upToDate: false, reset: true, head: found.head, history: found.history)
        }
        if found.more, let last = found.last {
            let snapshotFloor = floor ?? found.head
            let next = CursorPosition(
                epoch: position.epoch, version: last.version, timeline: found.history.timeline(of: last.version), after: last.key,
                tombstoneFloor: snapshotFloor > 0 && last.version <= snapshotFloor ? snapshotFloor : nil)
            return Page(objects: found.objects, end: next, upToDate: false, reset: reset, head: found.head, history: found.history)
        }
        let version = max(found.head, position.version)
        let end = CursorPosition(epoch: position.epoch, version: version, timeline: found.history.timeline(of: version))
        return Page(
            objects: found.objects, end: end, upToDate: true, reset: reset, version: end.version, head: found.head, history: found.history)
    }

    /// Whether a reader at `position` still needs a tombstone that may have been pruned (every
    /// pruned one is at or below `prunedThrough`). It needs those after its position: above
    /// its version, and at its version after `after` when it stops inside a commit; but not
    /// those at or below a snapshot's tombstone floor, which a snapshot leaves out anyway (or
    /// a snapshot restarted after pruning could never get past its first page).
    static func needsPruned(_ position: CursorPosition, prunedThrough: Int64) -> Bool {
        let floor = position.tombstoneFloor ?? 0
        if prunedThrough > max(position.version, floor) { return true }
        return position.after != nil && prunedThrough == position.version && floor < position.version
    }

    /// The page's objects, each made by `object`.
    private func rows<Object>(
        _ partition: Partition, from position: CursorPosition, limit: Int, floor: Int64?, target: ReadTarget? = nil,
        object: (ObjectKey, Int64, UnsafeRawBufferPointer?) throws -> Object
    ) async throws -> PageRead<[Object]> {
        var objects: [Object] = []
        objects.reserveCapacity(min(limit, 1024))
        let found = try await walk(partition, from: position, limit: limit, floor: floor, target: target) { collection, id, version, body in
            let key = ObjectKey(
                uncheckedCollection: String(decoding: collection, as: UTF8.self), id: String(decoding: id, as: UTF8.self))
            objects.append(try object(key, version, body))
        }
        return found.with(objects: objects)
    }

    /// One statement reads the head version and the objects after `position`, so both come
    /// from one snapshot: the head returned is exactly the version the rows are complete up
    /// to. It is the function of migration 0005, planned so that it always walks the
    /// partition's index in order; one more row than the page is read, to know whether more
    /// follow. Each of the page's objects is handed to `object` as the bytes of its row's
    /// cells (collection, id, version, body text or `nil` for a tombstone), read without
    /// postgres-nio's generic decoding, which costs a type lookup per row. The page also ends
    /// before an object that would take it past `maximumPageBytes` (a first object goes in
    /// whatever its size); the rest of the rows are then not read.
    ///
    /// With `target` and a replica in use, the page is read from the replica when
    /// ``ReadReplicas/read(_:_:)`` says it may; otherwise, or when the replica is behind, fails
    /// or does not answer in time before any row was handed over, from the primary.
    private func walk(
        _ partition: Partition, from position: CursorPosition, limit: Int, floor: Int64?, target: ReadTarget? = nil,
        object: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, Int64, UnsafeRawBufferPointer?) throws -> Void
    ) async throws -> PageRead<Int> {
        if let target, let replicas,
            let found = try await replicas.read(target, { replica, watch in
                try await walk(partition, from: position, limit: limit, floor: floor, on: replica) {
                    watch.took()
                    try object($0, $1, $2, $3)
                }
            })
        {
            return found
        }
        return try await client.withOpenConnection { connection in
            try await walk(partition, from: position, limit: limit, floor: floor, on: connection, object: object)
        }
    }

    /// One read of a page on `connection` (the primary, or a replica that said it is ready).
    private func walk(
        _ partition: Partition, from position: CursorPosition, limit: Int, floor: Int64?, on connection: PostgresConnection,
        object: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, Int64, UnsafeRawBufferPointer?) throws -> Void
    ) async throws -> PageRead<Int> {
        // Streamed (not `fetch`): a page's rows are decoded as they arrive.
        let rows = try await connection.query(
            """
            SELECT * FROM psync_page(\(partition.description), \(position.version), \(position.after?.collection)::text,
                                     \(position.after?.id)::text, \(floor)::bigint, \(limit + 1))
            """, logger: logger)
        var walk = PageWalk(limit: limit, maximumPageBytes: configuration.maximumPageBytes)
        for try await row in rows {
            guard try walk.take(row, object) else { break }
        }
        return walk.found
    }
}

/// The rows of one read of a page (migration 0014's `psync_page`), taken one at a time: the
/// partition's head and history from the first, each object handed over as the bytes of its
/// cells, until the page is full (`limit` objects, or ``StorageConfiguration/maximumPageBytes``).
private struct PageWalk {
    let limit: Int
    let maximumPageBytes: Int
    private(set) var read = PageRead<Int>(objects: 0)
    private var last: (version: Int64, collection: ByteBuffer, id: ByteBuffer)?
    private var bytes = 0
    private var first = true

    init(limit: Int, maximumPageBytes: Int) {
        self.limit = limit
        self.maximumPageBytes = maximumPageBytes
    }

    /// What the rows taken found.
    var found: PageRead<Int> {
        var found = read
        if let last {
            found.last = (last.version, ObjectKey(uncheckedCollection: String(buffer: last.collection), id: String(buffer: last.id)))
        }
        return found
    }

    /// Takes one row; `false` once the page is full and the rest need not be read.
    mutating func take(
        _ row: PostgresRow, _ object: (UnsafeRawBufferPointer, UnsafeRawBufferPointer, Int64, UnsafeRawBufferPointer?) throws -> Void
    ) throws -> Bool {
        var cells = row.makeIterator()
        guard let head = cells.next(), let pruned = cells.next(), let collection = cells.next(), let id = cells.next(),
            let version = cells.next(), let body = cells.next()
        else { throw PostgresDecodingError.Code.missingData }
        if first {
            // The partition's head, pruning point and timelines are the same on every row.
            first = false
            read.head = try head.int64() ?? 0
            read.prunedThrough = try pruned.int64() ?? 0
            guard let timeline = cells.next(), let pastTimelines = cells.next(), let pastEnds = cells.next() else {
                throw PostgresDecodingError.Code.missingData
            }
            read.history = try PartitionHistory(
                timeline: timeline.decode(Int32.self), pastTimelines: pastTimelines.decode([Int32]?.self) ?? [],
                pastEnds: pastEnds.decode([Int64]?.self) ?? [])
        }
        guard let collectionBytes = collection.bytes, let idBytes = id.bytes, let objectVersion = try version.int64() else {
            return true  // the partition's head alone: no object after the position
        }
        guard read.objects < limit else {
            read.more = true
            return true
        }
        let size = collectionBytes.readableBytes + idBytes.readableBytes + (body.bytes?.readableBytes ?? 0)
        if read.objects > 0, bytes + size > maximumPageBytes {
            read.more = true
            return false
        }
        bytes += size
        try collectionBytes.withUnsafeReadableBytes { collectionText in
            try idBytes.withUnsafeReadableBytes { idText in
                if let bodyBytes = body.bytes {
                    try JSONB.withText(of: bodyBytes) { try object(collectionText, idText, objectVersion, $0) }
                } else {
                    try object(collectionText, idText, objectVersion, nil)
                }
            }
        }
        read.objects += 1
        last = (objectVersion, collectionBytes, idBytes)
        return true
    }
}

extension PostgresCell {
    /// A `bigint` cell in binary format, read directly; `nil` for NULL.
    fileprivate func int64() throws -> Int64? {
        guard let bytes else { return nil }
        guard dataType == .int8, format == .binary, bytes.readableBytes == 8,
            let value = bytes.getInteger(at: bytes.readerIndex, as: Int64.self)
        else { throw PostgresDecodingError.Code.typeMismatch }
        return value
    }
}

/// What one read of a page found.
struct PageRead<Objects> {
    var head: Int64 = 0
    var prunedThrough: Int64 = 0
    var history = PartitionHistory()
    /// More objects follow the page.
    var more = false
    /// The page's last object.
    var last: (version: Int64, key: ObjectKey)?
    var objects: Objects

    /// The same read with other objects.
    func with<Other>(objects: Other) -> PageRead<Other> {
        PageRead<Other>(head: head, prunedThrough: prunedThrough, history: history, more: more, last: last, objects: objects)
    }
}

/// One page of a partition, before it becomes a batch.
struct Page<Objects> {
    var objects: Objects
    /// Where the page ends: the position to read the next page from.
    var end: CursorPosition
    var upToDate: Bool
    var reset: Bool
    var version: Int64? = nil
    /// The partition's head and history as the read found them.
    var head: Int64 = 0
    var history = PartitionHistory()
}

/// A page of encoded changes and where it ends, as a position: what the server's feeds and
/// sessions keep (the batch's cursor is the same place, for the wire).
package struct PositionedPage: Sendable {
    package var batch: EncodedChangeBatch
    package var end: CursorPosition
    /// The partition's head and history as the read found them: which other positions it
    /// continues (``PartitionHistory/contains(version:timeline:head:)``); `nil` when not known.
    package var history: (head: Int64, history: PartitionHistory)?

    package init(batch: EncodedChangeBatch, end: CursorPosition, history: (head: Int64, history: PartitionHistory)? = nil) {
        self.batch = batch
        self.end = end
        self.history = history
    }
}

/// The pages of a partition from a cursor until one is up to date, read one query per page
/// as the consumer iterates, so memory stays bounded by the page size whatever the partition
/// holds.
package struct ChangeFeed: AsyncSequence, Sendable {
    package typealias Element = ChangeBatch

    let store: ObjectStore
    let partition: Partition
    let cursor: Cursor?
    let limit: Int?

    package struct AsyncIterator: AsyncIteratorProtocol {
        let store: ObjectStore
        let partition: Partition
        var cursor: Cursor?
        let limit: Int?
        var finished = false

        package mutating func next() async throws -> ChangeBatch? {
            guard !finished else { return nil }
            let batch = try await store.changes(in: partition, after: cursor, limit: limit)
            cursor = batch.cursor
            finished = batch.upToDate
            return batch
        }
    }

    package func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(store: store, partition: partition, cursor: cursor, limit: limit)
    }
}
