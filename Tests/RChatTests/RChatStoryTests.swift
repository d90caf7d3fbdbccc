import Foundation
import PartitionSync
import RChat
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import SyncTriggers
import Testing

/// The whole RChat story over real WebSockets, as three users' apps would live it.
@Suite("RChat", .timeLimit(.minutes(30)))
struct RChatStoryTests {
    @Test("register, create a conversation, message, unread counts, forgery refused, presence")
    func story() async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            let alice = try await server.register("alice@example.com")
            let bob = try await server.register("bob@example.com")
            let carol = try await server.register("carol@example.com")

            // Registration created each User record and Chatster.
            #expect(try await RChatHarness.eventually {
                try await store.body(of: key("Chatster", carol.userID)) != nil
            })
            let aliceRecord = try #require(try await store.body(of: key("User", alice.userID)))
            #expect(aliceRecord["userName"] == "alice@example.com")
            #expect(aliceRecord["partition"] == .string("user=\(alice.userID)"))
            #expect(aliceRecord["userPreferences"]?["displayName"] == "alice@example.com")
            #expect(aliceRecord["presence"] == "Off-Line")
            #expect(aliceRecord["conversations"] == [])
            #expect(aliceRecord["lastSeenAt"] == .null)
            let decoded = try JSONValue.object(aliceRecord).decode(User.self)
            #expect(decoded._id == alice.userID && decoded.presence == .offLine)

            // Each app opens its user partition and the Chatsters.
            let aliceApp = try await server.connect(token: alice.accessToken)
            let bobApp = try await server.connect(token: bob.accessToken)
            let carolApp = try await server.connect(token: carol.accessToken)
            var bobUser = PartitionCopy()
            var carolChatsters = PartitionCopy()
            var aliceUser = PartitionCopy()
            for (app, id) in [(aliceApp, alice.userID), (bobApp, bob.userID), (carolApp, carol.userID)] {
                _ = try await app.next()
                app.send(.subscribe(partition: RChatPartitions.user(id), cursor: nil))
                app.send(.subscribe(partition: RChatPartitions.allUsers, cursor: nil))
            }
            try await aliceApp.sync(RChatPartitions.user(alice.userID), into: &aliceUser)
            try await bobApp.sync(RChatPartitions.user(bob.userID), into: &bobUser)

            // Presence: alice's app is connected, so everyone sees her On-Line.
            try await carolApp.sync(RChatPartitions.allUsers, into: &carolChatsters) { copy in
                copy.bodies[key("Chatster", alice.userID)]?["presence"] == "On-Line"
                    && copy.bodies[key("Chatster", bob.userID)]?["presence"] == "On-Line"
            }

            // Alice creates a conversation with bob by writing it into her own User record.
            let room = "c-\(UUID().uuidString.prefix(8).lowercased())"
            let created = try await aliceApp.upload(
                [.arrayAppend(key("User", alice.userID), path: path("conversations"),
                              value: RChatHarness.conversation(room, name: "Alice & Bob", creator: "alice@example.com", members: ["bob@example.com"]))],
                to: RChatPartitions.user(alice.userID), requestId: "create")
            #expect(created.isAck)
            // Bob's User record receives it live; alice's marks bob active.
            try await bobApp.sync(RChatPartitions.user(bob.userID), into: &bobUser) { $0.unreadCount(user: bob.userID, conversation: room) == 0 }
            try await aliceApp.sync(RChatPartitions.user(alice.userID), into: &aliceUser) { copy in
                copy.bodies[key("User", alice.userID)]?["conversations"]?.arrayValue?.first?["members"]?.arrayValue?
                    .allSatisfy { $0["membershipStatus"] == "Membership active" } == true
            }

            // Bob may open the conversation; carol may not.
            let conversation = RChatPartitions.conversation(room)
            bobApp.send(.subscribe(partition: conversation, cursor: nil))
            var bobRoom = PartitionCopy()
            try await bobApp.sync(conversation, into: &bobRoom)
            carolApp.send(.subscribe(partition: conversation, cursor: nil))
            _ = try await carolApp.next { message in
                if case .error(let error, let target) = message, target == conversation { return error.code == .permissionDenied }
                return false
            }

            // Alice sends three messages; bob, watching only his user partition, sees his count rise.
            bobApp.send(.unsubscribe(partition: conversation))
            for n in 1...3 {
                #expect(try await aliceApp.upload([RChatHarness.message("m\(n)", in: room, author: "alice@example.com", text: "hello \(n)")], to: conversation, requestId: "m\(n)").isAck)
            }
            try await bobApp.sync(RChatPartitions.user(bob.userID), into: &bobUser) { $0.unreadCount(user: bob.userID, conversation: room) == 3 }

            // Bob reads the room and resets his own count.
            #expect(try await bobApp.upload([.set(key("User", bob.userID), path: path("conversations[id=\(room)].unreadCount"), value: 0)],
                                            to: RChatPartitions.user(bob.userID), requestId: "read").isAck)
            try await bobApp.sync(RChatPartitions.user(bob.userID), into: &bobUser) { $0.unreadCount(user: bob.userID, conversation: room) == 0 }

            // Carol cannot write into the conversation; bob cannot forge alice's authorship.
            let intrusion = try await carolApp.upload([RChatHarness.message("x1", in: room, author: "carol@example.com", text: "let me in")], to: conversation, requestId: "x1")
            #expect(intrusion.rejectionCode == .permissionDenied)
            let forged = try await bobApp.upload([RChatHarness.message("x2", in: room, author: "alice@example.com", text: "I am alice")], to: conversation, requestId: "x2")
            #expect(forged.rejectionCode == .validationFailed)
            #expect(try await store.body(of: key("ChatMessage", "x1")) == nil)
            #expect(try await store.body(of: key("ChatMessage", "x2")) == nil)
            // Bob's own message counts for everyone.
            #expect(try await bobApp.upload([RChatHarness.message("m4", in: room, author: "bob@example.com", text: "hi alice")], to: conversation, requestId: "m4").isAck)
            try await aliceApp.sync(RChatPartitions.user(alice.userID), into: &aliceUser) { $0.unreadCount(user: alice.userID, conversation: room) == 4 }

            // Alice leaves: everyone sees her Off-Line, with the time she was last seen.
            await aliceApp.close()
            try await carolApp.sync(RChatPartitions.allUsers, into: &carolChatsters) { copy in
                copy.bodies[key("Chatster", alice.userID)]?["presence"] == "Off-Line"
                    && copy.bodies[key("Chatster", alice.userID)]?["lastSeenAt"]?.stringValue != nil
            }
            #expect(try await TriggerAdminProbe.deadLetters(store) == 0)
            await bobApp.close()
            await carolApp.close()
        }
    }

    @Test("validation: collections stay in their partition kind; userName cannot change; User records belong to the server")
    func validation() async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            let alice = try await server.register("alice@example.com")
            #expect(try await RChatHarness.eventually { try await store.body(of: key("User", alice.userID)) != nil })
            let app = try await server.connect(token: alice.accessToken)
            _ = try await app.next()
            let mine = RChatPartitions.user(alice.userID)
            let wrongPlace = try await app.upload([RChatHarness.message("m", in: "x", author: "alice@example.com", text: "hi")], to: mine, requestId: "a")
            #expect(wrongPlace.rejectionCode == .validationFailed)
            let rename = try await app.upload([.set(key("User", alice.userID), path: path("userName"), value: "mallory@example.com")], to: mine, requestId: "b")
            #expect(rename.rejectionCode == .validationFailed)
            let second = try await app.upload([.put(key("User", "other"), body: ["userName": "x"])], to: mine, requestId: "c")
            #expect(second.rejectionCode == .validationFailed)
            let delete = try await app.upload([.delete(key("User", alice.userID))], to: mine, requestId: "d")
            #expect(delete.rejectionCode == .validationFailed)
            let chatsterWrite = try await app.upload([.set(key("Chatster", alice.userID), path: path("presence"), value: "On-Line")], to: RChatPartitions.allUsers, requestId: "e")
            #expect(chatsterWrite.rejectionCode == .permissionDenied)
            // Allowed: her own preferences.
            #expect(try await app.upload([.set(key("User", alice.userID), path: path("userPreferences.displayName"), value: "Alice")], to: mine, requestId: "f").isAck)
            #expect(try await RChatHarness.eventually { try await store.body(of: key("Chatster", alice.userID))?["displayName"] == "Alice" })
            let unknown = try await app.upload([.put(key("Thing", "t"), body: [:])], to: try Partition("things=all"), requestId: "g")
            #expect(unknown.rejectionCode == .permissionDenied)
            await app.close()
        }
    }

    @Test("deleting an account removes its User record and Chatster")
    func accountDeletion() async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            let alice = try await server.register("alice@example.com")
            #expect(try await RChatHarness.eventually { try await store.body(of: key("Chatster", alice.userID)) != nil })
            let deleted = try await server.http.request("DELETE", "/v1/auth/user", body: nil, token: alice.accessToken)
            #expect(deleted.status == 204)
            #expect(try await RChatHarness.eventually {
                let chatster = try await store.body(of: key("Chatster", alice.userID))
                let user = try await store.body(of: key("User", alice.userID))
                return chatster == nil && user == nil
            })
            #expect(try await server.http.post("/v1/auth/login", ["email": "alice@example.com", "password": "correct horse battery"]).status == 401)
        }
    }
}

enum TriggerAdminProbe {
    static func deadLetters(_ store: ObjectStore) async throws -> Int {
        try await TriggerLedger(store: store).deadLetters().count
    }
}


