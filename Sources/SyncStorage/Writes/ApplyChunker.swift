/// How ``WriteTransaction/apply(_:)`` cuts the partitions it applies to into chunks, each read,
/// changed and written before the next: whole partitions, in order, about `budget` bytes of
/// bodies a chunk. The first chunk takes ``initialObjects`` objects; each later one as many as
/// the bodies written so far say fit the budget (records of a thousand members at ~80 kB: a
/// dozen a chunk at 1 MiB). Pure logic: the transaction tells it what each chunk wrote.
///
/// An apply of at most ``singleChunkObjects`` objects is one chunk (a trigger run over small
/// records, such as a run's unread counts in ten rooms of ten, takes the one-chunk path: no
/// savepoint, one read with the locks, the writes deferred to the commit as before); a larger
/// one starts small, since the next chunk is read before this one's bodies are measured.
struct ApplyChunker: Sendable, Hashable {
    /// Objects of the first chunk, before any body size is known.
    static let initialObjects = 16
    /// Objects an apply may touch and still be one chunk.
    static let singleChunkObjects = 128

    /// Bytes of bodies a chunk should hold.
    let budget: Int
    private(set) var objectsWritten = 0
    private(set) var bytesWritten = 0

    init(budget: Int) {
        self.budget = max(1, budget)
    }

    /// How many objects the next chunk should take.
    var objectsPerChunk: Int {
        guard objectsWritten > 0, bytesWritten > 0 else { return Self.initialObjects }
        return max(1, Int((Double(budget) * Double(objectsWritten) / Double(bytesWritten)).rounded(.down)))
    }

    /// The next chunk: the partitions from `start` (indexes into `objects`, the number of
    /// objects each touches) whose objects fit ``objectsPerChunk``, at least one partition
    /// (however many objects it touches); empty once `start` is past the end.
    func next(from start: Int, objects: [Int]) -> Range<Int> {
        guard start < objects.count else { return start..<start }
        let limit = objectsPerChunk
        var end = start + 1
        var taken = objects[start]
        while end < objects.count, taken + objects[end] <= limit {
            taken += objects[end]
            end += 1
        }
        return start..<end
    }

    /// A chunk of `objects` objects was written, their bodies `bytes` bytes.
    mutating func wrote(objects: Int, bytes: Int) {
        objectsWritten += objects
        bytesWritten += bytes
    }
}
