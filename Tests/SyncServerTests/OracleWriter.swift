import PartitionSync
import SyncProtocol
import SyncTesting

/// One writer's random batches for the server oracle. Each writer has keys of its own, and a
/// deleted key is never written again: its tombstone stays the last word on it in the
/// database, so the oracle knows every deletion even when no client saw its tombstone.
struct OracleWriter {
    let index: Int
    static let keysPerRoom = 10
    private var dead: Set<ObjectKey> = []
    private var deleting: Set<ObjectKey> = []

    init(index: Int) { self.index = index }

    mutating func randomBatch(in room: Partition, using random: inout SeededGenerator) -> [SyncOperation] {
        deleting = []
        var operations: [SyncOperation] = []
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            let object = key("Doc", "\(room.value)-w\(index)-\(Int.random(in: 0..<Self.keysPerRoom, using: &random))")
            guard !dead.contains(object), !deleting.contains(object) else { continue }
            switch Int.random(in: 0..<20, using: &random) {
            case 0..<6:
                operations.append(.put(object, body: ["name": .string("n\(Int.random(in: 0..<100, using: &random))"), "n": .int(0)]))
            case 6..<10: operations.append(.set(object, path: try! Path(parsing: "name"), value: .string("s\(Int.random(in: 0..<100, using: &random))")))
            case 10..<18: operations.append(.increment(object, path: try! Path(parsing: "n"), by: .int(1)))
            default:
                operations.append(.delete(object))
                deleting.insert(object)
            }
        }
        if operations.isEmpty {
            // Every drawn key was dead: write a fresh one.
            operations.append(.put(key("Doc", "\(room.value)-w\(index)-fresh\(Int.random(in: 0..<1_000_000, using: &random))"), body: ["n": .int(0)]))
        }
        return operations
    }

    /// The batch was acked (its deletions happened) or rejected (nothing happened).
    mutating func answered(accepted: Bool) {
        if accepted { dead.formUnion(deleting) }
        deleting = []
    }
}
