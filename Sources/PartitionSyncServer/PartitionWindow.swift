/// The documents an import has read but not yet written, held by partition so that each
/// transaction writes to few partitions (docs/PERFORMANCE.md, "`import`, third pass").
///
/// An export lists its documents in `_id` order, which for ObjectIds is the order they were
/// made in: the messages of a thousand conversations interleave, and a batch of 500 of them in
/// file order touches ~400 partitions, each locked, its version raised and its clock stamped by
/// the transaction. The window keeps up to a bounded number of documents and, when full, gives
/// the next batch from the partitions holding the most of them, whole: in steady state a
/// partition leaves when it holds about twice the window's average per partition, so a batch
/// touches a fraction of the partitions it would in file order, in the same bounded memory.
///
/// The documents of one partition leave in the order they came in; documents of different
/// partitions may leave in another order than the file's. Pure: no I/O, the caller writes the batches. (In the module
/// that uses it, so that it is specialized: a generic window of another module copied its
/// documents through value witnesses, which cost more CPU than the grouping saved.)
package struct PartitionWindow<Key: Hashable, Element> {
    /// A partition's documents, oldest first, and when the partition first came in (ties of
    /// size are broken by it, so the batches do not depend on hashing).
    private struct Queue {
        var arrival: Int
        var elements: [(element: Element, bytes: Int)] = []
        var bytes = 0

        mutating func append(_ element: Element, bytes: Int) {
            elements.append((element, bytes))
            self.bytes += bytes
        }
    }

    private var queues: [Key: Queue] = [:]
    private var arrivals = 0
    /// Documents held.
    package private(set) var count = 0
    /// Bytes of the documents held, as the caller counted them.
    package private(set) var bytes = 0

    /// Documents held before a batch must leave.
    package let documentLimit: Int
    /// Bytes held before a batch must leave.
    package let byteLimit: Int

    package init(documentLimit: Int, byteLimit: Int) {
        self.documentLimit = max(1, documentLimit)
        self.byteLimit = max(1, byteLimit)
    }

    package var isEmpty: Bool { count == 0 }

    /// Whether a batch must leave before the next document comes in.
    package var isFull: Bool { count >= documentLimit || bytes >= byteLimit }

    /// Partitions holding documents.
    package var partitionCount: Int { queues.count }

    /// Holds `element`, of `bytes`, in `partition`.
    package mutating func append(_ element: Element, partition: Key, bytes: Int) {
        // One lookup of the partition: a new one arrives now.
        let partitions = queues.count
        queues[partition, default: Queue(arrival: arrivals)].append(element, bytes: bytes)
        if queues.count > partitions { arrivals += 1 }
        count += 1
        self.bytes += bytes
    }

    /// The next batch: whole partitions, the ones holding the most documents first, until the
    /// batch holds `documents` documents or `bytes` bytes (the document that reaches the bytes
    /// is in it, as in a batch read in file order); a partition holding more than the room
    /// left gives its oldest documents. Empty only when the window is.
    package mutating func takeBatch(documents: Int, bytes byteLimit: Int) -> [Element] {
        guard !isEmpty else { return [] }
        var order: [(count: Int, arrival: Int, partition: Key)] = []
        order.reserveCapacity(queues.count)
        for (partition, queue) in queues { order.append((queue.elements.count, queue.arrival, partition)) }
        order.sort { a, b in a.count != b.count ? a.count > b.count : a.arrival < b.arrival }
        var batch: [Element] = []
        batch.reserveCapacity(min(documents, count))
        var batchBytes = 0
        for (_, _, partition) in order {
            guard batch.count < documents, batchBytes < byteLimit else { break }
            var queue = queues.removeValue(forKey: partition)!
            var taken = 0
            var takenBytes = 0
            while taken < queue.elements.count, batch.count < documents, batchBytes < byteLimit {
                let size = queue.elements[taken].bytes
                batch.append(queue.elements[taken].element)
                batchBytes += size
                takenBytes += size
                taken += 1
            }
            if taken < queue.elements.count {
                queue.elements.removeFirst(taken)
                queue.bytes -= takenBytes
                queues[partition] = queue
            }
        }
        count -= batch.count
        bytes -= batchBytes
        return batch
    }
}
