import PartitionSyncServer
import Testing

/// The import's read-ahead by partition: every document leaves once, a partition's in the
/// order they came, batches within their limits, and interleaved partitions leave a few at a
/// time instead of all in every batch.
@Suite("Partition window")
struct PartitionWindowTests {
    /// Fills a window with `documents` (partition, id) in order, taking a batch whenever it is
    /// full and then until it is empty, as the importer does; the batches taken.
    static func run(
        _ documents: [(partition: Int, id: Int)], window: Int, batch: Int, windowBytes: Int = .max, batchBytes: Int = .max,
        bytes: (Int) -> Int = { _ in 1 }
    ) -> [[(partition: Int, id: Int)]] {
        var buffer = PartitionWindow<Int, (partition: Int, id: Int)>(documentLimit: window, byteLimit: windowBytes)
        var batches: [[(partition: Int, id: Int)]] = []
        for document in documents {
            buffer.append(document, partition: document.partition, bytes: bytes(document.id))
            while buffer.isFull { batches.append(buffer.takeBatch(documents: batch, bytes: batchBytes)) }
        }
        while !buffer.isEmpty { batches.append(buffer.takeBatch(documents: batch, bytes: batchBytes)) }
        return batches
    }

    static func interleaved(_ count: Int, partitions: Int) -> [(partition: Int, id: Int)] {
        (0..<count).map { (partition: $0 % partitions, id: $0) }
    }

    @Test("every document leaves once, a partition's in file order, batches at most the batch size")
    func onceAndInOrder() {
        var random = SystemRandomNumberGenerator()
        let documents = (0..<5_000).map { (partition: Int.random(in: 0..<37, using: &random), id: $0) }
        let batches = Self.run(documents, window: 600, batch: 50)
        let taken = batches.flatMap { $0 }
        #expect(taken.map(\.id).sorted() == Array(0..<5_000))
        #expect(batches.allSatisfy { !$0.isEmpty && $0.count <= 50 })
        for partition in 0..<37 {
            let ids = taken.filter { $0.partition == partition }.map(\.id)
            #expect(ids == ids.sorted(), "partition \(partition) in file order")
        }
    }

    @Test("partitions interleaved in the file leave a few per batch, not all of them in every one")
    func fewPartitionsPerBatch() {
        // 100 partitions round robin, batches of 50: in file order every batch touches 50.
        let batches = Self.run(Self.interleaved(20_000, partitions: 100), window: 2_000, batch: 50)
        let touched = batches.map { Set($0.map(\.partition)).count }
        #expect(batches.count == 400)
        // The window holds ~20 documents per partition: a batch takes two or three partitions.
        #expect(touched.reduce(0, +) <= 400 * 5, "partitions per batch: \(touched)")
        #expect(touched.max()! <= 25, "partitions per batch: \(touched)")
    }

    @Test("a window of one batch gives the documents in file order")
    func windowOfOneBatch() {
        let batches = Self.run(Self.interleaved(1_000, partitions: 7), window: 100, batch: 100)
        #expect(batches.count == 10)
        for (number, batch) in batches.enumerated() {
            #expect(Set(batch.map(\.id)) == Set(number * 100..<(number + 1) * 100))
        }
    }

    @Test("bytes bound the window and each batch; the document that reaches the batch's bytes is in it")
    func byteLimits() {
        var window = PartitionWindow<Int, Int>(documentLimit: 1_000, byteLimit: 100)
        for id in 0..<9 { window.append(id, partition: id % 3, bytes: 10) }
        #expect(!window.isFull && window.bytes == 90 && window.count == 9 && window.partitionCount == 3)
        window.append(9, partition: 0, bytes: 10)
        #expect(window.isFull)
        // Partition 0 holds the most (0, 3, 6, 9); 25 bytes end the batch after its third.
        #expect(window.takeBatch(documents: 100, bytes: 25) == [0, 3, 6])
        #expect(window.count == 7 && window.bytes == 70 && !window.isFull)
        // Then partition 1 (three, come before 2's three), and the oldest of 2 before 0's one.
        #expect(window.takeBatch(documents: 4, bytes: 1_000) == [1, 4, 7, 2])
        #expect(window.takeBatch(documents: 4, bytes: 1_000) == [5, 8, 9])
        #expect(window.isEmpty && window.bytes == 0 && window.partitionCount == 0)
        #expect(window.takeBatch(documents: 4, bytes: 1_000) == [])
    }

    @Test("a partition holding more than a batch gives its oldest documents first")
    func largePartition() {
        var window = PartitionWindow<String, Int>(documentLimit: 10, byteLimit: .max)
        for id in 0..<10 { window.append(id, partition: id < 8 ? "big" : "small", bytes: 1) }
        #expect(window.takeBatch(documents: 5, bytes: .max) == [0, 1, 2, 3, 4])
        #expect(window.takeBatch(documents: 5, bytes: .max) == [5, 6, 7, 8, 9])
    }
}
