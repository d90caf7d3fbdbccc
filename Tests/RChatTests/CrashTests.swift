import Foundation
import PartitionSync
import RChat
import SyncProtocol
import SyncStorage
import SyncTesting
import SyncTriggers
import Testing

/// Real server processes killed with SIGKILL while messages flow: no trigger event is lost or
/// applied twice.
@Suite("RChat under crashes", .timeLimit(.minutes(30)))
struct CrashTests {

    static let environment = ["PSYNC_TRIGGER_LEASE": "2", "PSYNC_PRESENCE_LEASE": "3"]

    /// Registers alice and bob and gives them a conversation; returns (alice, bob, room).
    static func setUp(_ http: TestHTTPClient, _ store: ObjectStore) async throws -> (TestHTTPClient.Tokens, TestHTTPClient.Tokens, String) {
        let alice = try await http.register("alice@example.com", password: "correct horse battery")
        let bob = try await http.register("bob@example.com", password: "correct horse battery")
        #expect(try await RChatHarness.eventually { try await store.body(of: key("User", bob.userID)) != nil })
        let room = "crash-room"
        let operation: JSONValue = [
            "op": "arrayAppend", "collection": "User", "id": .string(alice.userID), "path": "conversations",
            "value": RChatHarness.conversation(room, name: "Crash", creator: "alice@example.com", members: ["bob@example.com"]),
        ]
        let created = try await http.post("/v1/partitions/user%3D\(alice.userID)/uploads", ["requestId": "create", "operations": [operation]], token: alice.accessToken)
        #expect(created.status == 200)
        #expect(try await RChatHarness.eventually {
            try await store.body(of: key("User", bob.userID))?["conversations"]?.arrayValue?.count == 1
        })
        return (alice, bob, room)
    }

    /// Sends a message until it is acknowledged, through whichever server answers.
    static func send(_ n: Int, room: String, as tokens: TestHTTPClient.Tokens, author: String, via servers: [ServerProcess]) async throws {
        let body: JSONValue = [
            "requestId": .string("message-\(n)"),
            "operations": [["op": "put", "collection": "ChatMessage", "id": .string("m\(n)"),
                            "body": ["author": .string(author), "text": .string("message \(n)"), "location": [], "timestamp": .string(JSONValue.iso8601(Date()))]]],
        ]
        let deadline = ContinuousClock.now + .seconds(120)
        var attempt = 0
        while ContinuousClock.now < deadline {
            let server = servers[attempt % servers.count]
            attempt += 1
            if let response = try? await server.http.post("/v1/partitions/conversation%3D\(room)/uploads", body, token: tokens.accessToken) {
                if response.status == 200 { return }
                #expect(response.status >= 500, "message \(n) refused: \(response.text)")
                if response.status < 500 { return }
            }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestTimeout(what: "message \(n) to be acknowledged")
    }

    static func unreadCounts(_ store: ObjectStore, _ users: [String], room: String) async throws -> [Int64] {
        var counts: [Int64] = []
        for user in users {
            let count = try await store.body(of: key("User", user))?["conversations"]?.arrayValue?
                .first { $0["id"] == .string(room) }?["unreadCount"]?.intValue
            counts.append(count ?? -1)
        }
        return counts
    }

    static func messageCount(_ store: ObjectStore, room: String) async throws -> Int {
        try await store.snapshot(of: RChatPartitions.conversation(room)).count
    }

    @Test("a server killed at random moments while messages flow: every unread count equals the messages, none lost or doubled")
    func killedServer() async throws {
        let seed = ProcessInfo.processInfo.environment["PSYNC_SEED"].flatMap(UInt64.init) ?? 20_261_122
        try await TestDatabase.with(exclusive: true) { db in
            let store = db.store()
            let server = try ServerProcess(database: db.url, environment: Self.environment)
            try await server.start()
            let (alice, bob, room) = try await Self.setUp(server.http, store)
            let messages = 60
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    for n in 0..<messages {
                        let sender = n % 3 == 0 ? (bob, "bob@example.com") : (alice, "alice@example.com")
                        try await Self.send(n, room: room, as: sender.0, author: sender.1, via: [server])
                    }
                }
                group.addTask {
                    var random = SeededGenerator(seed: seed)
                    for _ in 0..<4 {
                        try await Task.sleep(for: .milliseconds(Int.random(in: 200...900, using: &random)))
                        await server.kill()
                        try await Task.sleep(for: .milliseconds(Int.random(in: 50...300, using: &random)))
                        try await server.start()
                    }
                }
                try await group.waitForAll()
            }
            #expect(try await Self.messageCount(store, room: room) == messages)
            let settled = try await RChatHarness.eventually(timeout: .seconds(30)) {
                try await Self.unreadCounts(store, [alice.userID, bob.userID], room: room) == [Int64(messages), Int64(messages)]
            }
            let counts = try await Self.unreadCounts(store, [alice.userID, bob.userID], room: room)
            #expect(settled, "unread counts \(counts) for \(messages) messages")
            #expect(try await TriggerLedger(store: store).deadLetters().isEmpty)
            // SIGTERM stops it cleanly.
            #expect(await server.stop() == 0)
        }
    }

    @Test("two instances: each trigger runs on one of them, and survives that instance's death")
    func twoInstances() async throws {
        try await TestDatabase.with(exclusive: true) { db in
            let store = db.store()
            let first = try ServerProcess(database: db.url, environment: Self.environment)
            let second = try ServerProcess(database: db.url, environment: Self.environment)
            try await first.start()
            try await second.start()
            let (alice, bob, room) = try await Self.setUp(first.http, store)
            for n in 0..<20 {
                try await Self.send(n, room: room, as: alice, author: "alice@example.com", via: [first, second])
            }
            #expect(try await RChatHarness.eventually {
                try await Self.unreadCounts(store, [alice.userID, bob.userID], room: room) == [20, 20]
            })
            // Each trigger has one holder, one of the two instances.
            let pids = [first.processIdentifier!, second.processIdentifier!]
            let statuses = try await TriggerLedger(store: store).statuses()
            #expect(statuses.count == RChatTriggers.all.count)
            for status in statuses {
                let holder = try #require(status.leaseHolder)
                #expect(pids.filter { holder.contains("-\($0)-") }.count == 1, "\(status.name) held by \(holder)")
            }
            // Kill the instance holding the unread-count trigger; the other takes it over.
            let unread = try #require(statuses.first { $0.name == RChatTriggers.unreadCounts.name }?.leaseHolder)
            let (victim, survivor) = unread.contains("-\(pids[0])-") ? (first, second) : (second, first)
            let survivorPID = survivor.processIdentifier!
            await victim.kill()
            for n in 20..<40 {
                try await Self.send(n, room: room, as: bob, author: "bob@example.com", via: [survivor])
            }
            #expect(try await RChatHarness.eventually(timeout: .seconds(30)) {
                try await Self.unreadCounts(store, [alice.userID, bob.userID], room: room) == [40, 40]
            })
            // Every trigger ends up on the survivor (those without events take their lease too).
            #expect(try await RChatHarness.eventually(timeout: .seconds(10)) {
                try await TriggerLedger(store: store).statuses().allSatisfy { $0.leaseHolder?.contains("-\(survivorPID)-") == true }
            })
            #expect(try await TriggerLedger(store: store).deadLetters().isEmpty)
            await survivor.stop()
        }
    }
}
