import PartitionSync
import Synchronization
@testable import RChat
import SyncProtocol
import SyncTesting
import Testing

/// The in-memory objects, counting the bodies a handler reads.
private final class CountingReads: ObjectTransaction, Sendable {
    let objects: InMemoryObjects
    let read = Mutex<[ObjectKey]>([])

    init(_ objects: InMemoryObjects) { self.objects = objects }

    func bodies(of keys: [ObjectKey]) async throws -> [ObjectKey: [String: JSONValue]] {
        let found = try await objects.bodies(of: keys)
        read.withLock { $0 += found.keys }
        return found
    }

    func find(_ search: ObjectSearch) async throws -> [(partition: Partition, object: SyncObject)] {
        let found = try await objects.find(search)
        read.withLock { $0 += found.map(\.object.key) }
        return found
    }

    func keys(_ search: ObjectSearch) async throws -> [(partition: Partition, key: ObjectKey)] { try await objects.keys(search) }
    func keys(_ searches: [ObjectSearch]) async throws -> [[(partition: Partition, key: ObjectKey)]] { try await objects.keys(searches) }
    func email(ofUser userID: String) async throws -> String? { try await objects.email(ofUser: userID) }
    func userID(ofEmail email: String) async throws -> String? { try await objects.userID(ofEmail: email) }
    func apply(_ operations: [SyncOperation], in partition: Partition) async throws -> [ObjectChange] { try await objects.apply(operations, in: partition) }
    func apply(_ operations: [Partition: [SyncOperation]]) async throws -> Int { try await objects.apply(operations) }
    func openSessions(of userID: String) async throws -> Int { try await objects.openSessions(of: userID) }
}

@Suite("RChat invitations")
struct InvitationReadsTests {
    @Test("inviting into a big room reads the records of the invitees still to get their copy, not those of its members (each lists the whole room)")
    func readsOnlyInvitees() async throws {
        let objects = InMemoryObjects()
        let members = (0..<40).map { "m\($0)" }
        func entry(_ names: [String], pending: [String] = []) -> Conversation {
            Conversation(
                id: "c1", displayName: "Big",
                members: names.map { Member(userName: "\($0)@example.com", membershipStatus: .active) }
                    + pending.map { Member(userName: "\($0)@example.com", membershipStatus: .pending) })
        }
        for id in members {
            try objects.put(User(_id: id, userName: "\(id)@example.com", conversations: [entry(members)]), in: RChatPartitions.user(id))
        }
        // Two invitees: one still without the room, one whose copy an earlier part of the
        // invitation wrote already.
        try objects.put(User(_id: "new", userName: "new@example.com"), in: RChatPartitions.user("new"))
        try objects.put(User(_id: "got", userName: "got@example.com", conversations: [entry(members + ["got"])]), in: RChatPartitions.user("got"))
        try objects.put(Membership(conversation: "c1", creator: "m0", members: members + ["got"]), in: Membership.partition("c1"))

        let reads = CountingReads(objects)
        let context = TriggerContext(transaction: reads, trigger: "test")
        var inviter = try #require(try await context.object(User.self, id: "m0"))
        inviter.conversations = [entry(members, pending: ["new", "got"])]
        let changes = try await context.save(inviter, in: RChatPartitions.user("m0"))
        let event = ChangeEvent.object(try #require(changes.first), in: RChatPartitions.user("m0"), author: "m0")
        reads.read.withLock { $0 = [] }

        try await RChatTriggers.userChanged.handler(event, context)

        let users = Set(reads.read.withLock { $0 }.filter { $0.collection == User.collection }.map(\.id))
        #expect(users == ["new"], "User records read: \(users.sorted())")
        // And the invitation went through: both members, both active, the new one with the room.
        let membership = try #require(try await context.object(Membership.self, id: "c1"))
        #expect(membership.members.contains("new") && membership.members.contains("got"))
        let newcomer = try #require(try await context.object(User.self, id: "new"))
        #expect(newcomer.conversations.map(\.id) == ["c1"] && newcomer.conversations[0].members.count == 42)
        let after = try #require(try await context.object(User.self, id: "m0"))
        #expect(after.conversations[0].members.allSatisfy { $0.membershipStatus == .active })
    }
}
