import Foundation
import PartitionSync
import RChat
import SyncStorage
import SyncTesting
import SyncTriggers
import Testing

/// A room's invitations are delivered in parts, each committed on its own (a room of 5,000 is
/// 5,000 copies of a 0.4 MB member list: one transaction outlived the trigger's timeout). A
/// server killed after a part committed leaves some invitees with their copy and the room's
/// membership unwritten; the instance that takes the trigger over delivers the rest, and no
/// invitee gets the room twice (a copy is an append to the invitee's list).
@Suite("RChat: invitations in parts", .timeLimit(.minutes(30)))
struct InvitationPartsTests {
    @Test("a server killed after a part of a room's invitations committed: after the restart every invitee lists the room once, everyone active, nothing dead-lettered")
    func killedBetweenParts() async throws {
        try await TestDatabase.with(exclusive: true) { db in
            let store = db.store()
            // Parts of one copy each after the first group; the first part stops the handler.
            var environment = CrashTests.environment
            environment["PSYNC_TRIGGER_PART_BYTES"] = "1"
            var stopping = environment
            stopping["PSYNC_FAILPOINT"] = "\(Failpoint.triggerPartCommitted.rawValue):\(RChatTriggers.userChanged.name)"
            let first = try ServerProcess(database: db.url, environment: stopping)
            try await first.start()
            var members: [TestHTTPClient.Tokens] = []
            for n in 0..<30 { members.append(try await first.http.register("member\(n)@example.com", password: "correct horse battery")) }
            let ids = members.map(\.userID)
            let registered = try await RChatHarness.eventually { try await store.body(of: key("User", ids.last!)) != nil }
            #expect(registered)
            let room = "c-parts"
            let operation: JSONValue = [
                "op": "arrayAppend", "collection": "User", "id": .string(ids[0]), "path": "conversations",
                "value": RChatHarness.conversation(room, name: "Parts", creator: "member0@example.com",
                                                   members: (1..<30).map { "member\($0)@example.com" }),
            ]
            let created = try await first.http.post(
                "/v1/partitions/user%3D\(ids[0])/uploads", ["requestId": "create", "operations": [operation]], token: members[0].accessToken)
            #expect(created.status == 200)
            try await Self.waitForFailpoint(first)
            await first.kill()
            // Some invitees have their copy, not all; the room's membership is not written yet.
            let delivered = try await Self.listings(store, ids.dropFirst(), room: room)
            let holding = delivered.filter { $0 == 1 }.count
            #expect(holding > 0 && holding < ids.count - 1, "copies committed before the kill: \(delivered)")
            #expect(try await store.body(of: key("Membership", room)) == nil)

            let second = try ServerProcess(database: db.url, environment: environment)
            try await second.start()
            let settled = try await RChatHarness.eventually(timeout: .seconds(60)) {
                try await Self.settled(db, store, ids, room: room)
            }
            let listed = try await Self.listings(store, ids[...], room: room)
            #expect(settled, "each member's listings of the room: \(listed)")
            #expect(listed == Array(repeating: 1, count: ids.count))
            let membership = try await store.body(of: key("Membership", room))?["members"]?.arrayValue?.compactMap(\.stringValue)
            #expect(Set(membership ?? []) == Set(ids) && membership?.count == ids.count)
            #expect(try await TriggerLedger(store: store).deadLetters().isEmpty)
            #expect(await second.stop() == 0)
        }
    }

    /// Whether every trigger caught up and every one of `ids` lists `room` once, with everyone
    /// in it, active.
    static func settled(_ db: TestDatabase, _ store: ObjectStore, _ ids: [String], room: String) async throws -> Bool {
        guard try await db.triggersCaughtUp() else { return false }
        let active = JSONValue.string(MembershipStatus.active.rawValue)
        for id in ids {
            let listed = try await store.body(of: key("User", id))?["conversations"]?.arrayValue ?? []
            let copies = listed.filter { $0["id"] == .string(room) }
            guard copies.count == 1, let members = copies[0]["members"]?.arrayValue, members.count == ids.count,
                members.allSatisfy({ $0["membershipStatus"] == active })
            else { return false }
        }
        return true
    }

    /// How many times each user's record lists `room`.
    static func listings(_ store: ObjectStore, _ ids: ArraySlice<String>, room: String) async throws -> [Int] {
        var counts: [Int] = []
        for id in ids {
            let listed = try await store.body(of: key("User", id))?["conversations"]?.arrayValue ?? []
            counts.append(listed.filter { $0["id"] == .string(room) }.count)
        }
        return counts
    }

    static func waitForFailpoint(_ server: ServerProcess) async throws {
        let marker = "failpoint \(Failpoint.triggerPartCommitted.rawValue) reached"
        let reached = try await RChatHarness.eventually(timeout: .seconds(60)) {
            (try? String(contentsOfFile: server.logPath, encoding: .utf8))?.contains(marker) == true
        }
        #expect(reached, "the server never committed a part of the invitations")
    }
}
