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
            // The copies and the creator's marks were written by the membership trigger: no
            // event of them was recorded for it to read back; the creator's upload is one.
            let events = try await db.client.query(
                "SELECT author, count(*)::bigint FROM psync_events WHERE collection = 'User' AND operation = 'update' GROUP BY author",
                logger: db.logger)
            var authors: [String: Int64] = [:]
            for try await (author, count) in events.decode((String, Int64).self) { authors[author] = count }
            #expect(authors["trigger:rchat.user-changed"] == nil && authors[creator.userID] == 1, "\(authors)")
            await app.close()
        }
    }

    @Test("a room created with more invitees than one apply takes (1,100 > the engine's 1,000 operations): every invitee gets the copy and is marked active, nothing dead-lettered")
    func moreInviteesThanOneApply() async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            let creator = try await server.register("creator@example.com")
            // The invitees' User records, written as the registration trigger writes them
            // (accounts are not needed: an invitation finds users by their records).
            let count = 1_100
            for n in 0..<count {
                let id = "invitee-\(n)"
                let user = User(_id: id, userName: "invitee\(n)@example.com", conversations: [], presence: .offLine)
                try await db.apply([.put(key("User", id), body: try #require(try JSONValue(encoding: user).objectValue))], in: RChatPartitions.user(id))
            }
            #expect(try await RChatHarness.eventually { try await store.body(of: key("User", creator.userID)) != nil })
            let app = try await server.connect(token: creator.accessToken)
            _ = try await app.next()
            let answer = try await app.upload(
                [.arrayAppend(key("User", creator.userID), path: path("conversations"),
                              value: RChatHarness.conversation("c-huge", name: "Huge", creator: "creator@example.com",
                                                               members: (0..<count).map { "invitee\($0)@example.com" }))],
                to: RChatPartitions.user(creator.userID), requestId: "create")
            #expect(answer.isAck)
            #expect(try await RChatHarness.eventually(timeout: .seconds(120)) { try await db.triggersCaughtUp() })
            #expect(try await db.deadLetters().isEmpty)
            let active = JSONValue.string(MembershipStatus.active.rawValue)
            let copy = try #require(try await store.body(of: key("User", creator.userID))?["conversations"]?.arrayValue?.first)
            #expect(copy["members"]?.arrayValue?.count == count + 1)
            #expect(copy["members"]?.arrayValue?.allSatisfy { $0["membershipStatus"] == active } == true)
            for n in [0, 499, 500, 999, 1_000, count - 1] {
                #expect(try await store.body(of: key("User", "invitee-\(n)"))?["conversations"]?.arrayValue?.first?["id"] == "c-huge", "invitee \(n)")
            }
            #expect(try await db.scalar("SELECT cardinality(ARRAY(SELECT jsonb_array_elements_text(body->'members'))) FROM psync_objects WHERE collection = 'Membership' AND id = 'c-huge'") == Int64(count + 1))
            await app.close()
        }
    }
}
