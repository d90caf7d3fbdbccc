import CouchChat
import CouchChatClient
import Foundation
import PartitionSync
import SyncTesting
import Testing

/// CouchChat's client on the SDK against a real server: rooms, invitations, and a picture sent
/// as a blob that the other member fetches.
@Suite("CouchChat client", .timeLimit(.minutes(30)))
struct ClientTests {
    @Test("Ann invites Bob with the client and sends a picture; Bob's client lists the room and fetches the picture")
    func picture() async throws {
        let home = NSTemporaryDirectory() + "couchchat-client-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: home) }
        try await TestDatabase.with { db in
            try await TestServer.with(database: db, application: .couchChat) { server in
                let url = try #require(URL(string: server.baseURL))
                let ann = try CouchChatSession(server: url, home: home + "/ann")
                let bob = try CouchChatSession(server: url, home: home + "/bob")
                try await ann.client.register(email: "ann@example.com", password: "correct horse battery")
                try await bob.client.register(email: "bob@example.com", password: "correct horse battery")
                let connections = [Task { await ann.client.run() }, Task { await bob.client.run() }]
                defer { for connection in connections { connection.cancel() } }
                // The server makes each profile; Bob's then accepts Ann's invitations.
                #expect(try await TestTriggers.eventually { try await db.object(Profile.self, id: Profile.id(of: "bob@example.com")) != nil })
                try await bob.acceptInvitations(from: ["ann@example.com"], fromAnyone: false)
                #expect(await bob.client.waitUntilUploaded(timeout: .seconds(20)))

                // Bob's room list, followed live: the room appears when the friend bot has let him
                // in (an event, not a number of polls that a slow machine may run out of).
                let list = try CouchChatPartitions.user(try #require(await bob.client.userID))
                _ = try await bob.client.open(list)
                let updates = await bob.client.updates(of: list)
                let room = try await ann.createRoom(title: "Pictures", inviting: ["bob@example.com"])
                var listed = false
                for await snapshot in updates {
                    let rooms = try RoomList.decode(snapshot.objects).first?.rooms ?? []
                    if rooms.contains(where: { $0.id == room }) {
                        listed = true
                        break
                    }
                }
                #expect(listed)
                #expect(try await bob.rooms(wait: .seconds(5)).contains { $0.id == room })

                let picture = Data((0..<700_000).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ $0 >> 10) })
                let file = URL(fileURLWithPath: home + "/picture.png")
                try picture.write(to: file)
                try await ann.send("look", to: room, photo: file)
                #expect(await ann.client.waitUntilUploaded(timeout: .seconds(20)))

                #expect(try await TestTriggers.eventually { try await bob.messages(in: room, wait: .seconds(5)).count == 1 })
                let chats = try await bob.messages(in: room, wait: .seconds(5))
                #expect(chats.first?.photo?.contentType == "image/png")
                #expect(try await bob.photo(of: try #require(chats.first)) == picture)
            }
        }
    }
}
