import Foundation
import SyncTesting
import Testing

/// Three people chat with the `rchat` executable, each command a separate process, against a
/// real `psync serve` process.
@Suite("rchat, the terminal client", .timeLimit(.minutes(30)))
struct RChatCLITests {
    /// Runs `body` with a `psync serve` process on a new database and a folder for the users'
    /// homes; a failure stops the server before its database is dropped (a server left
    /// running would outlive the test process).
    static func withServer(_ body: @escaping @Sendable (TestDatabase, ServerProcess, String) async throws -> Void) async throws {
        let root = NSTemporaryDirectory() + "rchat-cli-\(UUID().uuidString)"
        defer { try? FileManager.default.removeItem(atPath: root) }
        try await TestDatabase.with(exclusive: true) { db in
            let server = try ServerProcess(database: db.url)
            try await server.start()
            do {
                try await body(db, server, root)
            } catch {
                await server.kill()
                throw error
            }
            await server.stop()
        }
    }

    @Test("three users: register, create a room, send, watch, unread counts, read, offline send, profile")
    func scriptedSession() async throws {
        try await Self.withServer { db, server, root in
            let ann = RChatCLI(email: "ann@example.com", server: server.baseURL, root: root)
            let bob = RChatCLI(email: "bob@example.com", server: server.baseURL, root: root)
            let carol = RChatCLI(email: "carol@example.com", server: server.baseURL, root: root)

            for user in [ann, bob, carol] {
                let output = try await user.ok(["register", "--email", user.email, "--password", "correct horse battery"])
                #expect(output.contains("Registered \(user.email)"))
            }
            // Logging in again works with the same password, not with another.
            #expect(try await bob.ok(["login", "--email", bob.email, "--password", "correct horse battery"]).contains("Signed in"))
            let wrong = try await bob.run(["login", "--email", bob.email, "--password", "wrong password"])
            #expect(wrong.status != 0)
            #expect(wrong.output.contains("invalid_credentials"))

            #expect(try await ann.ok(["rooms"]).contains("No rooms yet"))
            #expect(try await ann.ok(["create", "Team", bob.email, carol.email]).contains("Created Team"))
            // The membership trigger puts the room into the members' records.
            for user in [bob, carol] {
                let rooms = try await user.eventually(["rooms"], contains: "Team")
                #expect(rooms.contains("unread 0"))
                #expect(rooms.contains(ann.email))
            }

            // Bob watches the room live while Ann writes.
            let watch = try bob.start(["watch", "Team", "--seconds", "120"])
            try await watch.waitFor("Watching as \(bob.email)")
            try await watch.waitFor("Team: 0 unread")
            #expect(try await ann.ok(["send", "Team", "hello from ann"]).contains("Sent to Team"))
            try await watch.waitFor("\(ann.email): hello from ann")
            do {
                try await watch.waitFor("Team: 1 unread")
            } catch {
                print(try await db.diagnosis(collection: "User", field: "conversations"))
                throw error
            }

            // Carol sees the unread count, reads, and the count goes back to zero.
            _ = try await carol.eventually(["rooms"], contains: "unread 1")
            // A command connects for a moment and does not bring her on line (issue 34: no
            // flapping in Bob's view); her own watch does, while it runs.
            let carolsWatch = try carol.start(["watch", "--seconds", "120"])
            // (a process to start, then two triggers: presence, then the Chatster copy)
            try await watch.waitFor("\(carol.email) is On-Line", timeout: .seconds(90))
            let read = try await carol.ok(["read", "Team"])
            #expect(read.contains("Team: 1 message(s)"))
            #expect(read.contains("\(ann.email): hello from ann"))
            _ = try await carol.eventually(["rooms"], contains: "unread 0")
            let mark = watch.mark
            await carolsWatch.stop()
            try await watch.waitFor("\(carol.email) is Off-Line", since: mark)

            // A photo and a location arrive with the message.
            let photo = root + "/photo.bin"
            try Data((0..<5_000).map { UInt8($0 % 251) }).write(to: URL(fileURLWithPath: photo))
            try await ann.ok(["send", "Team", "look", "--photo", photo, "--location", "48.85,2.35"])
            try await watch.waitFor("\(ann.email): look (photo 4 kB) (at 48.85,2.35)")
            try await watch.waitFor("Team: 2 unread")

            // While the server is down, Carol's message is queued; it is delivered once the
            // server is back, by the next command she runs.
            // With a 10 MiB photo, which travels as a blob, uploaded before the message.
            await server.kill()
            let big = Data((0..<(10 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 12) })
            let bigPhoto = root + "/big.jpg"
            try big.write(to: URL(fileURLWithPath: bigPhoto))
            let queued = try await carol.ok(["send", "Team", "sent while the server was down", "--photo", bigPhoto], wait: 1)
            #expect(queued.contains("queued"))
            #expect(!queued.contains("Sent to"))
            try await server.start()
            await watch.stop()  // its connection went with the server; a new watch follows
            // Carol came on line once, with her watch; none of her commands showed her.
            #expect(watch.output.components(separatedBy: "\(carol.email) is On-Line").count == 2, "\(watch.output)")
            let afterwards = try await carol.ok(["rooms"])
            #expect(!afterwards.contains("queued"))
            // The unread trigger raises Bob's count for it (his third) before he reads: a read
            // that came first would be followed by the raise, and his count would stay at 1.
            _ = try await bob.eventually(["rooms"], contains: "unread 3")
            let messages = try await bob.eventually(["read", "Team"], contains: "sent while the server was down")
            #expect(messages.components(separatedBy: "sent while the server was down").count == 2)  // exactly once
            #expect(messages.contains("Team: 3 message(s)"))
            #expect(messages.contains("sent while the server was down (photo 10240 kB)"))
            // Bob fetches the photo: the same bytes.
            let saved = root + "/bob-photos"
            let fetched = try await bob.ok(["read", "Team", "--save-photos", saved])
            #expect(fetched.contains("(10485760 bytes)"))
            let files = try FileManager.default.contentsOfDirectory(atPath: saved)
            #expect(files.count == 2)
            let bigFile = try #require(files.first { $0.hasSuffix(".jpg") })
            #expect(try Data(contentsOf: URL(fileURLWithPath: saved + "/" + bigFile)) == big)
            _ = try await bob.eventually(["rooms"], contains: "unread 0")
            // As in RChat, every member's count rises, the author's too: Ann has read none of the three.
            _ = try await ann.eventually(["rooms"], contains: "unread 3")

            // A display name set in the profile reaches the public Chatster.
            #expect(try await ann.ok(["profile", "--display-name", "Ann A."]).contains("Profile updated"))
            // (the Chatster trigger copies it; members' room lists show it)
            _ = try await bob.eventually(["rooms"], contains: "Ann A. <\(ann.email)>")
            // A write the server refuses is reported with its code, and the command exits 1
            // (issue 34: it printed "Profile updated." and exited 0).
            let tooLong = try await ann.run(["profile", "--display-name", String(repeating: "n", count: 101)])
            #expect(tooLong.status == 1, "\(tooLong.output)")
            #expect(tooLong.output.contains("validation_failed"), "\(tooLong.output)")
            #expect(!tooLong.output.contains("Profile updated"), "\(tooLong.output)")

            // Logged out, commands ask to log in.
            try await carol.ok(["logout"])
            let refused = try await carol.run(["rooms"])
            #expect(refused.status != 0)
            #expect(refused.output.contains("not signed in"))
        }
    }

    @Test("issue 34, finding 2: a watch and other commands of one user share a store: no locked store, nothing falsely queued, a write queued offline by one process is sent once")
    func twoProcessesOneStore() async throws {
        try await Self.withServer { _, server, root in
            let ann = RChatCLI(email: "ann@example.com", server: server.baseURL, root: root)
            let bob = RChatCLI(email: "bob@example.com", server: server.baseURL, root: root)
            for user in [ann, bob] { try await user.ok(["register", "--email", user.email, "--password", "correct horse battery"]) }
            try await ann.ok(["create", "Team", bob.email])
            _ = try await bob.eventually(["rooms"], contains: "Team")

            // Bob's watch holds the store open while his other commands use it too.
            let watch = try bob.start(["watch", "Team", "--seconds", "300"])
            try await watch.waitFor("Team: 0 unread")
            for round in 1...3 {
                var mark = watch.mark
                #expect(try await ann.ok(["send", "Team", "round \(round)"]).contains("Sent to Team"))
                try await watch.waitFor("\(ann.email): round \(round)", since: mark)
                try await watch.waitFor("Team: 1 unread", since: mark)
                mark = watch.mark
                let read = try await bob.ok(["read", "Team"])
                #expect(read.contains("round \(round)"))
                #expect(!read.contains("queued"), "round \(round): \(read)")
                #expect(!read.contains("locked"), "round \(round): \(read)")
                try await watch.waitFor("Team: 0 unread", since: mark)
            }
            // Bob's own message goes through the store the watch holds open too (and, as in
            // RChat, raises his own count).
            var mark = watch.mark
            let sent = try await bob.ok(["send", "Team", "a reply"])
            #expect(sent.contains("Sent to Team"), "\(sent)")
            try await watch.waitFor("\(bob.email): a reply", since: mark)
            try await watch.waitFor("Team: 1 unread", since: mark)
            mark = watch.mark
            #expect(!(try await bob.ok(["read", "Team"])).contains("queued"))
            try await watch.waitFor("Team: 0 unread", since: mark)
            #expect(!watch.output.contains("locked"), "\(watch.output)")

            // Offline, what another of Bob's processes does shows in his watch at once (it
            // follows the store, not only the server): the room read, a message queued.
            mark = watch.mark
            #expect(try await ann.ok(["send", "Team", "before the outage"]).contains("Sent to Team"))
            try await watch.waitFor("Team: 1 unread", since: mark)
            await server.kill()
            mark = watch.mark
            let readOffline = try await bob.ok(["read", "Team"], wait: 1)
            #expect(readOffline.contains("before the outage"))
            try await watch.waitFor("Team: 0 unread", since: mark)
            mark = watch.mark
            let queued = try await bob.ok(["send", "Team", "written offline"], wait: 1)
            #expect(queued.contains("queued"))
            try await watch.waitFor("\(bob.email): written offline", since: mark)
            #expect(watch.output.contains("Connection lost"))
            // Back on line, whichever of Bob's processes is connected sends it; it is stored once.
            try await server.start()
            try await watch.waitFor("Connected again.", since: mark, timeout: .seconds(60))
            let messages = try await ann.eventually(["read", "Team"], contains: "written offline")
            #expect(messages.components(separatedBy: "written offline").count == 2, "\(messages)")  // exactly once
            await watch.stop()
        }
    }
}
