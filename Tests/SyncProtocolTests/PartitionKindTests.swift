import SyncProtocol
import Testing

@Suite("Partition kinds")
struct PartitionKindTests {
    static let room = PartitionKind("room")
    static let user = PartitionKind("user")

    @Test("a kind makes its partitions and tells its own from the others")
    func makesAndTells() throws {
        let partition = try Self.room("r1")
        #expect(partition == (try Partition("room=r1")))
        #expect(partition.kind == Self.room)
        #expect(Self.room.value(of: partition) == "r1")
        #expect(Self.user.value(of: partition) == nil)
        let kind: String
        switch partition.kind {
        case Self.user: kind = "user"
        case Self.room: kind = "room"
        default: kind = "other"
        }
        #expect(kind == "room")
    }

    @Test("declaring a kind cannot fail; a malformed key or value makes no partition (invalid_partition)")
    func malformed() {
        let bad = PartitionKind("Room Key")
        #expect(!bad.isValid)
        #expect(Self.room.isValid)
        #expect(PartitionKind(String(repeating: "a", count: 64)).isValid)
        #expect(!PartitionKind(String(repeating: "a", count: 65)).isValid)
        #expect(throws: SyncError.self) { try bad("x") }
        do {
            _ = try Self.room("a=b")
            Issue.record("a value with '=' made a partition")
        } catch {
            #expect(error.code == .invalidPartition)
        }
    }
}
