import Foundation
import PartitionSync
import PostgresNIO
import RChat
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

@Suite("RChat: a big room", .timeLimit(.minutes(30)))
struct BigRoomTests {
    @Test("a room of 40 members costs one change per member record, and every copy shows everyone active")
    func membershipIsLinear() async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            var registered: [TestHTTPClient.Tokens] = []
            for n in 0..<40 { registered.append(try await server.register("member\(n)@example.com")) }
            let members = registered
            #expect(try await RChatHarness.eventually {
                try await store.body(of: key("User", members.last!.userID)) != nil
            })
            let creator = members[0]
            let app = try await server.connect(token: creator.accessToken)
            _ = try await app.next()
            let room = "c-big"
            _ = try await app.upload(
                [.arrayAppend(key("User", creator.userID), path: path("conversations"),
                              value: RChatHarness.conversation(room, name: "Big", creator: "member0@example.com",
                                                               members: (1..<40).map { "member\($0)@example.com" }))],
                to: RChatPartitions.user(creator.userID), requestId: "create")
            let active = JSONValue.string(MembershipStatus.active.rawValue)
            // Every member's copy, and the creator's, list all 40 as active.
            #expect(try await RChatHarness.eventually(timeout: .seconds(60)) {
                for member in members {
                    guard let copy = try await store.body(of: key("User", member.userID))?["conversations"]?.arrayValue?.first,
                        copy["members"]?.arrayValue?.allSatisfy({ $0["membershipStatus"] == active }) == true,
                        copy["members"]?.arrayValue?.count == 40
                    else { return false }
                }
                return true
            })
            // Every event handled by every trigger (none left to number, none past a trigger's
            // position): any further round would have been written by now.
            #expect(try await RChatHarness.eventually(timeout: .seconds(60)) { try await db.triggersCaughtUp() })
            // The trigger wrote each member record once (the copy): no member's own change set
            // off another round. Each write of a record is a new version of its user partition:
            // one when the account was registered, one for the copy.
            let rows = try await db.client.query(
                "SELECT version FROM psync_partitions WHERE partition = ANY(\(members.dropFirst().map { "user=\($0.userID)" }))",
                logger: db.logger)
            var versions: [Int64] = []
            for try await version in rows.decode(Int64.self) { versions.append(version) }
            #expect(versions == Array(repeating: 2, count: 39))
            await app.close()
        }
    }
}
