@testable import SyncStorage
import Testing

@Suite("Apply chunker")
struct ApplyChunkerTests {
    @Test("the first chunk takes the initial number of objects, in whole partitions")
    func firstChunk() {
        let chunker = ApplyChunker(budget: 1_000)
        let objects = Array(repeating: 1, count: 400)
        #expect(chunker.next(from: 0, objects: objects) == 0..<ApplyChunker.initialObjects)
        // Partitions of 5 objects: as many whole ones as fit the initial number.
        #expect(chunker.next(from: 0, objects: Array(repeating: 5, count: 100)) == 0..<(ApplyChunker.initialObjects / 5))
    }

    @Test("later chunks take as many objects as the bodies written so far say fit the budget")
    func adapts() {
        var chunker = ApplyChunker(budget: 1_000)
        chunker.wrote(objects: 16, bytes: 3_200)
        // 200 bytes an object: 5 a chunk.
        #expect(chunker.objectsPerChunk == 5)
        #expect(chunker.next(from: 16, objects: Array(repeating: 1, count: 40)) == 16..<21)
        chunker.wrote(objects: 4, bytes: 20)
        // Smaller objects since: (16 + 4) objects in 3,220 bytes.
        #expect(chunker.objectsPerChunk == 6)
    }

    @Test("a partition with more objects than a chunk goes alone, objects larger than the budget one at a time, and past the end the chunk is empty")
    func edges() {
        var chunker = ApplyChunker(budget: 100)
        chunker.wrote(objects: 1, bytes: 1_000)
        #expect(chunker.objectsPerChunk == 1)
        #expect(chunker.next(from: 0, objects: [1, 1, 1]) == 0..<1)
        #expect(chunker.next(from: 1, objects: [1, 7, 1]) == 1..<2)
        #expect(chunker.next(from: 3, objects: [1, 1, 1]).isEmpty)
        // Nothing written with a body (deletes): the initial size again.
        #expect(ApplyChunker(budget: 100).objectsPerChunk == ApplyChunker.initialObjects)
        var deletes = ApplyChunker(budget: 100)
        deletes.wrote(objects: 16, bytes: 0)
        #expect(deletes.objectsPerChunk == ApplyChunker.initialObjects)
    }
}
