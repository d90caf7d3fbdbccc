import Foundation
import PartitionSync
import RChat
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import SyncTriggers
import Testing

/// Who gets into a conversation, and what one user can do to another's records: the attacks
/// of the security review, each as it was reproduced over the public API.
@Suite("RChat: conversation access", .timeLimit(.minutes(30)))
struct ConversationAccessTests {
    static let pending = JSONValue.string(MembershipStatus.pending.rawValue)
    static let active = JSONValue.string(MembershipStatus.active.rawValue)

    static func membership(_ store: ObjectStore, _ room: String) async throws -> [String]? {
        try await store.body(of: key("Membership", room))?["members"]?.arrayValue?.compactMap(\.stringValue)
    }

    static func lists(_ store: ObjectStore, _ user: String, _ room: String) async throws -> Bool {
        try await store.body(of: key("User", user))?["conversations"]?.arrayValue?.contains { $0["id"] == .string(room) } ?? false
    }

    /// Registers users and waits for their User records.
    static func users(_ server: TestServer, _ store: ObjectStore, _ names: [String]) async throws -> [TestHTTPClient.Tokens] {
        var tokens: [TestHTTPClient.Tokens] = []
        for name in names { tokens.append(try await server.register("\(name)@example.com")) }
        let all = tokens
        #expect(try await RChatHarness.eventually {
            for user in all where try await store.body(of: key("User", user.userID)) == nil { return false }
            return true
        })
        return tokens
    }

    static func app(_ server: TestServer, _ user: TestHTTPClient.Tokens) async throws -> TestSyncClient {
        let app = try await server.connect(token: user.accessToken)
        _ = try await app.next()
        return app
    }

    @Test("finding 1: listing a conversation in one's own record grants nothing; only a member brings others in")
    func selfGrantedAccess() async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            let users = try await Self.users(server, store, ["alice", "bob", "mallory", "carol"])
            let (alice, bob, mallory, carol) = (users[0], users[1], users[2], users[3])
            let aliceApp = try await Self.app(server, alice)
            let malloryApp = try await Self.app(server, mallory)
            let room = "c-\(UUID().uuidString.prefix(8).lowercased())"
            let conversation = RChatPartitions.conversation(room)
            #expect(try await aliceApp.upload(
                [.arrayAppend(key("User", alice.userID), path: path("conversations"),
                              value: RChatHarness.conversation(room, name: "Alice & Bob", creator: "alice@example.com", members: ["bob@example.com"]))],
                to: RChatPartitions.user(alice.userID), requestId: "create").isAck)
            #expect(try await RChatHarness.eventually { try await Self.membership(store, room)?.sorted() == [alice.userID, bob.userID].sorted() })
            #expect(try await aliceApp.upload([RChatHarness.message("m1", in: room, author: "alice@example.com", text: "secret")], to: conversation, requestId: "m1").isAck)

            // Mallory learns the id and lists it in his own record, with carol as pending.
            let forged = RChatHarness.conversation(room, name: "mine now", creator: "mallory@example.com", members: ["carol@example.com"])
            #expect(try await malloryApp.upload([.arrayAppend(key("User", mallory.userID), path: path("conversations"), value: forged)],
                                                to: RChatPartitions.user(mallory.userID), requestId: "forge").isAck)
            malloryApp.send(.subscribe(partition: conversation, cursor: nil))
            let answer = try await malloryApp.next { message in
                switch message {
                case .error(_, let target): return target == conversation
                case .changes(let batch): return batch.partition == conversation
                default: return false
                }
            }
            #expect(answer == .error(SyncError(.permissionDenied, "you may not read \(conversation)"), partition: conversation))
            let post = try await malloryApp.upload([RChatHarness.message("x1", in: room, author: "mallory@example.com", text: "hi")], to: conversation, requestId: "x1")
            #expect(post.rejectionCode == .permissionDenied)
            let pull = try await server.http.get("/v1/partitions/conversation%3D\(room)/changes", token: mallory.accessToken)
            #expect(pull.status == 403)
            // The forged listing is taken out of his record, and carol was not pulled in.
            #expect(try await RChatHarness.eventually { try await !Self.lists(store, mallory.userID, room) })
            #expect(try await !Self.lists(store, carol.userID, room))
            #expect(try await Self.membership(store, room)?.sorted() == [alice.userID, bob.userID].sorted())
            // New messages raise no count in his record, and mallory's later attempts still fail.
            #expect(try await aliceApp.upload([RChatHarness.message("m2", in: room, author: "alice@example.com", text: "more")], to: conversation, requestId: "m2").isAck)
            #expect(try await RChatHarness.eventually { try await PartitionCopy.unread(store, bob.userID, room) == 2 })
            #expect(try await store.body(of: key("ChatMessage", "x1")) == nil)
            #expect(try await TriggerAdminProbe.deadLetters(store) == 0)
            await aliceApp.close()
            await malloryApp.close()
        }
    }

    @Test("finding 1: the first lister creates a conversation; nobody can claim it again, even after everyone left")
    func firstListerCreates() async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            let users = try await Self.users(server, store, ["alice", "mallory"])
            let (alice, mallory) = (users[0], users[1])
            let aliceApp = try await Self.app(server, alice)
            let malloryApp = try await Self.app(server, mallory)
            let room = "c-solo"
            // Alice may post at once, before the trigger has recorded the new conversation.
            let entry = RChatHarness.conversation(room, name: "Solo", creator: "alice@example.com", members: [])
            _ = try await aliceApp.upload([.arrayAppend(key("User", alice.userID), path: path("conversations"), value: entry)],
                                          to: RChatPartitions.user(alice.userID), requestId: "create")
            #expect(try await aliceApp.upload([RChatHarness.message("m1", in: room, author: "alice@example.com", text: "first")],
                                              to: RChatPartitions.conversation(room), requestId: "m1").isAck)
            #expect(try await RChatHarness.eventually { try await Self.membership(store, room) == [alice.userID] })
            // Alice leaves; the record stays, empty, and mallory's claim is refused.
            #expect(try await aliceApp.upload([.arrayRemove(key("User", alice.userID), path: path("conversations"), match: ["id": .string(room)])],
                                              to: RChatPartitions.user(alice.userID), requestId: "leave").isAck)
            #expect(try await RChatHarness.eventually { try await Self.membership(store, room) == [] })
            let claim = RChatHarness.conversation(room, name: "Mine", creator: "mallory@example.com", members: [])
            _ = try await malloryApp.upload([.arrayAppend(key("User", mallory.userID), path: path("conversations"), value: claim)],
                                            to: RChatPartitions.user(mallory.userID), requestId: "claim")
            let pull = try await server.http.get("/v1/partitions/conversation%3D\(room)/changes", token: mallory.accessToken)
            #expect(pull.status == 403)
            #expect(try await RChatHarness.eventually { try await !Self.lists(store, mallory.userID, room) })
            #expect(try await Self.membership(store, room) == [])
            await aliceApp.close()
            await malloryApp.close()
        }
    }

    @Test("leaving, or deleting the account, ends the membership and the open subscription")
    func leavingEndsAccess() async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            let users = try await Self.users(server, store, ["alice", "bob"])
            let (alice, bob) = (users[0], users[1])
            let aliceApp = try await Self.app(server, alice)
            let bobApp = try await Self.app(server, bob)
            let room = "c-leave"
            let conversation = RChatPartitions.conversation(room)
            _ = try await aliceApp.upload(
                [.arrayAppend(key("User", alice.userID), path: path("conversations"),
                              value: RChatHarness.conversation(room, name: "R", creator: "alice@example.com", members: ["bob@example.com"]))],
                to: RChatPartitions.user(alice.userID), requestId: "create")
            #expect(try await RChatHarness.eventually { try await Self.membership(store, room)?.count == 2 })
            bobApp.send(.subscribe(partition: conversation, cursor: nil))
            var bobRoom = PartitionCopy()
            try await bobApp.sync(conversation, into: &bobRoom)
            // Bob leaves: his subscription ends, and listing the room again does not bring him back.
            bobApp.send(.upload(requestId: "leave", partition: RChatPartitions.user(bob.userID),
                                operations: [.arrayRemove(key("User", bob.userID), path: path("conversations"), match: ["id": .string(room)])]))
            // The ack and the end of the subscription, in either order.
            var (acked, revoked) = (false, false)
            while !(acked && revoked) {
                switch try await bobApp.next(timeout: .seconds(20)) {
                case .ack(let id, _, _, _) where id == "leave": acked = true
                case .unsubscribed(let target, let code) where target == conversation: revoked = code == .permissionRevoked
                default: break
                }
            }
            #expect(try await RChatHarness.eventually { try await Self.membership(store, room) == [alice.userID] })
            let again = RChatHarness.conversation(room, name: "R", creator: "bob@example.com", members: [])
            _ = try await bobApp.upload([.arrayAppend(key("User", bob.userID), path: path("conversations"), value: again)],
                                        to: RChatPartitions.user(bob.userID), requestId: "rejoin")
            #expect(try await RChatHarness.eventually { try await !Self.lists(store, bob.userID, room) })
            #expect(try await server.http.get("/v1/partitions/conversation%3D\(room)/changes", token: bob.accessToken).status == 403)
            // Alice deletes her account: the room is left with no member.
            #expect(try await server.http.request("DELETE", "/v1/auth/user", body: nil, token: alice.accessToken).status == 204)
            #expect(try await RChatHarness.eventually { try await Self.membership(store, room) == [] })
            await aliceApp.close()
            await bobApp.close()
        }
    }

    @Test("finding 2: an invitation copy has a fixed shape and size; padding and unknown fields are refused")
    func invitationShape() async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            let users = try await Self.users(server, store, ["alice", "bob"])
            let (alice, bob) = (users[0], users[1])
            let aliceApp = try await Self.app(server, alice)
            let mine = RChatPartitions.user(alice.userID)
            func append(_ value: JSONValue, _ id: String) async throws -> ServerMessage {
                try await aliceApp.upload([.arrayAppend(key("User", alice.userID), path: path("conversations"), value: value)], to: mine, requestId: id)
            }
            var entry = RChatHarness.conversation("c-pad", name: "Pad", creator: "alice@example.com", members: ["bob@example.com"])
            var padded = entry.objectValue!
            padded["payload"] = .string(String(repeating: "x", count: 100_000))
            #expect(try await append(.object(padded), "extra").rejectionCode == .validationFailed)
            padded = entry.objectValue!
            padded["displayName"] = .string(String(repeating: "x", count: 101))
            #expect(try await append(.object(padded), "long-name").rejectionCode == .validationFailed)
            padded = entry.objectValue!
            padded["members"] = .array((0...2_000).map { ["userName": .string("u\($0)@example.com"), "membershipStatus": Self.pending] })
            #expect(try await append(.object(padded), "many").rejectionCode == .validationFailed)
            padded = entry.objectValue!
            padded["members"] = [["userName": "bob@example.com", "membershipStatus": Self.pending, "note": .string(String(repeating: "x", count: 1000))]]
            #expect(try await append(.object(padded), "member-fields").rejectionCode == .validationFailed)
            #expect(try await append(["id": "c-x", "displayName": "X", "unreadCount": -1, "members": []], "negative").rejectionCode == .validationFailed)
            // A valid entry with a member who is no user: bob's copy holds only the model's
            // fields and the members who are users.
            entry = RChatHarness.conversation("c-ok", name: "Fine", creator: "alice@example.com", members: ["bob@example.com", "ghost@example.com"])
            #expect(try await append(entry, "ok").isAck)
            #expect(try await RChatHarness.eventually { try await Self.lists(store, bob.userID, "c-ok") })
            let copy = try #require(try await store.body(of: key("User", bob.userID))?["conversations"]?.arrayValue?.first?.objectValue)
            #expect(copy.keys.sorted() == ["displayName", "id", "members", "unreadCount"])
            #expect(copy["members"] == [
                ["userName": "alice@example.com", "membershipStatus": Self.active],
                ["userName": "bob@example.com", "membershipStatus": Self.active],
            ])
            await aliceApp.close()
        }
    }

    @Test("issue 29, finding 7: an invitation copy holds only members that are users of the conversation, whatever the inviter marks active")
    func invitationHoldsOnlyUsers() async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            let users = try await Self.users(server, store, ["alice", "bob", "carol"])
            let (alice, bob) = (users[0], users[1])
            let aliceApp = try await Self.app(server, alice)
            // Alice lists Bob as invited, and 1,997 invented "members" as active: no such
            // accounts, markup, and Carol, a real user who is no member.
            let invented = ["ceo@bank.example", "<img src=x onerror=alert(1)>", "carol@example.com"]
                + (0..<1_994).map { "invented\($0)@example.com" }
            var members: [JSONValue] = [["userName": "alice@example.com", "membershipStatus": Self.active]]
            members += invented.map { ["userName": .string($0), "membershipStatus": Self.active] }
            members.append(["userName": "bob@example.com", "membershipStatus": Self.pending])
            #expect(members.count == 1_999)
            let entry: JSONValue = ["id": "c-lies", "displayName": "Lies", "unreadCount": 0, "members": .array(members)]
            #expect(try await aliceApp.upload(
                [.arrayAppend(key("User", alice.userID), path: path("conversations"), value: entry)],
                to: RChatPartitions.user(alice.userID), requestId: "lies").isAck)
            #expect(try await RChatHarness.eventually { try await Self.lists(store, bob.userID, "c-lies") })
            let record = try #require(try await store.body(of: key("User", bob.userID)))
            let copy = try #require(record["conversations"]?.arrayValue?.first { $0["id"] == "c-lies" })
            #expect(copy["members"] == [
                ["userName": "alice@example.com", "membershipStatus": Self.active],
                ["userName": "bob@example.com", "membershipStatus": Self.active],
            ])
            #expect(JSONValue.object(record).jsonBytes.count < 4_096)
            #expect(try await Self.membership(store, "c-lies")?.sorted() == [alice.userID, bob.userID].sorted())
            await aliceApp.close()
        }
    }

    @Test("an invitee who registers after the invitation gets the room when their record is made, and reads it")
    func invitedBeforeRegistering() async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            let alice = try await Self.users(server, store, ["alice"])[0]
            let aliceApp = try await Self.app(server, alice)
            let room = "c-\(UUID().uuidString.prefix(8).lowercased())"
            #expect(try await aliceApp.upload(
                [.arrayAppend(key("User", alice.userID), path: path("conversations"),
                              value: RChatHarness.conversation(room, name: "Early", creator: "alice@example.com", members: ["bob@example.com"]))],
                to: RChatPartitions.user(alice.userID), requestId: "create").isAck)
            #expect(try await RChatHarness.eventually { try await Self.membership(store, room) == [alice.userID] })
            #expect(try await aliceApp.upload([RChatHarness.message("m1", in: room, author: "alice@example.com", text: "before you came")],
                                              to: RChatPartitions.conversation(room), requestId: "m1").isAck)

            let bob = try await Self.users(server, store, ["bob"])[0]
            #expect(try await RChatHarness.eventually { try await Self.membership(store, room) == [alice.userID, bob.userID] })
            #expect(try await RChatHarness.eventually { try await Self.lists(store, bob.userID, room) })
            let marks = try await store.body(of: key("User", alice.userID))?["conversations"]?.arrayValue?.first { $0["id"] == .string(room) }
            #expect(marks?["members"]?.arrayValue?.map { $0["membershipStatus"] } == [Self.active, Self.active])
            let pull = try await server.http.get("/v1/partitions/conversation%3D\(room)/changes", token: bob.accessToken)
            #expect(pull.status == 200)
            await aliceApp.close()
        }
    }

    @Test("finding 2: invitations stop at the invitee's budget; the invitee can still write their record")
    func invitationBudget() async throws {
        let limits = RChatLimits(maximumConversations: 2)
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, application: RChat.application(limits: limits), configure: RChatHarness.configure) { server in
                let store = db.store()
                let users = try await Self.users(server, store, ["alice", "bob", "carol", "dave"])
                let bob = users[1]
                // Three creators, each inviting bob: his record may list two.
                for (n, creator) in [users[0], users[2], users[3]].enumerated() {
                    let app = try await Self.app(server, creator)
                    let name = ["alice", "carol", "dave"][n]
                    #expect(try await app.upload(
                        [.arrayAppend(key("User", creator.userID), path: path("conversations"),
                                      value: RChatHarness.conversation("c-\(n + 1)", name: "R", creator: "\(name)@example.com", members: ["bob@example.com"]))],
                        to: RChatPartitions.user(creator.userID), requestId: "create").isAck)
                    #expect(try await RChatHarness.eventually { try await Self.membership(store, "c-\(n + 1)") != nil })
                    await app.close()
                }
                // The third stays pending in its creator's copy; bob is not its member.
                #expect(try await store.body(of: key("User", bob.userID))?["conversations"]?.arrayValue?.count == 2)
                #expect(try await Self.membership(store, "c-2")?.count == 2)
                #expect(try await Self.membership(store, "c-3") == [users[3].userID])
                let third = try await store.body(of: key("User", users[3].userID))?["conversations"]?.arrayValue?.first { $0["id"] == "c-3" }
                #expect(third?["members"]?.arrayValue?.last?["membershipStatus"] == Self.pending)
                let bobApp = try await Self.app(server, bob)
                #expect(try await bobApp.upload([.set(key("User", bob.userID), path: path("userPreferences.displayName"), value: "Bob")],
                                                to: RChatPartitions.user(bob.userID), requestId: "name").isAck)
                await bobApp.close()
            }
        }
    }

    @Test("finding 3: a hostile conversation id is refused where it enters and stalls no trigger")
    func hostileIDs() async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            let users = try await Self.users(server, store, ["alice", "bob", "carol"])
            let (alice, carol) = (users[0], users[2])
            let aliceApp = try await Self.app(server, alice)
            for (n, id) in ["a]b", "a=b", "a.b", "a[id=b]", String(repeating: "x", count: 65), ""].enumerated() {
                let entry = RChatHarness.conversation(id, name: "Odd", creator: "alice@example.com", members: ["bob@example.com"])
                let answer = try await aliceApp.upload([.arrayAppend(key("User", alice.userID), path: path("conversations"), value: entry)],
                                                       to: RChatPartitions.user(alice.userID), requestId: "odd-\(n)")
                #expect(answer.rejectionCode == .validationFailed, "\(id)")
            }
            // Such ids already stored (written before the check existed) are passed over by the
            // triggers: the changes of other users behind them go through, and nothing is dead-lettered.
            for id in ["x]y", "x=y", "x.y"] {
                try await store.upload(Upload(
                    partition: RChatPartitions.user(alice.userID),
                    operations: [.arrayAppend(key("User", alice.userID), path: path("conversations"),
                                              value: RChatHarness.conversation(id, name: "Odd", creator: "alice@example.com", members: ["bob@example.com"]))],
                    principal: "setup"))
            }
            let carolApp = try await Self.app(server, carol)
            #expect(try await carolApp.upload([.set(key("User", carol.userID), path: path("userPreferences.displayName"), value: "Carol")],
                                              to: RChatPartitions.user(carol.userID), requestId: "name").isAck)
            #expect(try await RChatHarness.eventually { try await store.body(of: key("Chatster", carol.userID))?["displayName"] == "Carol" })
            #expect(try await TriggerAdminProbe.deadLetters(store) == 0)
            await aliceApp.close()
            await carolApp.close()
        }
    }

    @Test("findings 11 and 13: a display name cannot pass for another user's email; an avatar is bounded")
    func publicProfile() async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            let users = try await Self.users(server, store, ["alice"])
            let alice = users[0]
            let app = try await Self.app(server, alice)
            let mine = RChatPartitions.user(alice.userID)
            let displayName = path("userPreferences.displayName")
            #expect(try await app.upload([.set(key("User", alice.userID), path: displayName, value: "bob@example.com")], to: mine, requestId: "a").rejectionCode == .validationFailed)
            #expect(try await app.upload([.set(key("User", alice.userID), path: displayName, value: "alice@example.com")], to: mine, requestId: "b").isAck)
            #expect(try await app.upload([.set(key("User", alice.userID), path: displayName, value: "Alice")], to: mine, requestId: "c").isAck)
            let big: JSONValue = ["_id": "p", "thumbNail": .string(String(repeating: "A", count: 70_000)), "date": "2026-11-25T00:00:00Z"]
            let avatar = path("userPreferences.avatarImage")
            #expect(try await app.upload([.set(key("User", alice.userID), path: avatar, value: big)], to: mine, requestId: "d").rejectionCode == .payloadTooLarge)
            let small: JSONValue = ["_id": "p", "thumbNail": .string(String(repeating: "A", count: 1_000)), "date": "2026-11-25T00:00:00Z"]
            #expect(try await app.upload([.set(key("User", alice.userID), path: avatar, value: small)], to: mine, requestId: "e").isAck)
            #expect(try await app.upload([.set(key("User", alice.userID), path: path("extra"), value: "x")], to: mine, requestId: "f").rejectionCode == .validationFailed)
            #expect(try await app.upload([.set(key("User", alice.userID), path: path("presence"), value: "Admin")], to: mine, requestId: "g").rejectionCode == .validationFailed)
            #expect(try await app.upload([.set(key("User", alice.userID), path: path("presence"), value: "Hidden")], to: mine, requestId: "h").isAck)
            await app.close()
        }
    }
}

extension PartitionCopy {
    static func unread(_ store: ObjectStore, _ user: String, _ room: String) async throws -> Int64? {
        try await store.body(of: key("User", user))?["conversations"]?.arrayValue?.first { $0["id"] == .string(room) }?["unreadCount"]?.intValue
    }
}
