import Foundation
import PartitionSync
import RChat
import SyncProtocol
import SyncStorage
import SyncTesting
import Testing

/// Triggers that depend on each other's effects: `rchat.presence` needs the User record that
/// `rchat.user-registered` makes, and may see a session event first.
@Suite("RChat presence right after registration", .timeLimit(.minutes(30)))
struct PresenceOrderTests {
    @Test("a user who opens a session right after signing up shows On-Line", arguments: 0..<3)
    func onLineAfterSignUp(round: Int) async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            let tokens = try await server.register("fresh\(round)@example.com")
            // At once: the session opens while the registration trigger may not have run yet.
            let client = try await server.connect(token: tokens.accessToken)
            let online = try await RChatHarness.eventually(timeout: .seconds(30)) {
                try await store.body(of: key("User", tokens.userID))?["presence"] == "On-Line"
            }
            let presence = try await store.body(of: key("User", tokens.userID))?["presence"]
            #expect(online, "presence \(String(describing: presence)) with a session open")
            _ = await client.close()
            // And Off-Line once the last session closes.
            #expect(try await RChatHarness.eventually(timeout: .seconds(30)) {
                try await store.body(of: key("User", tokens.userID))?["presence"] == "Off-Line"
            })
        }
    }

    @Test("issue 34: a client connected for one command (presence=off) does not make its user On-Line, so a watch sees no flapping")
    func briefSessionsDoNotCount() async throws {
        try await RChatHarness.with { db, server in
            let store = db.store()
            let tokens = try await server.register("brief@example.com")
            let user = key("User", tokens.userID)
            #expect(try await RChatHarness.eventually(timeout: .seconds(30)) { try await store.body(of: user)?["presence"] == "Off-Line" })
            // A command's session, held open throughout.
            let brief = try await TestSyncClient.connect(url: server.webSocketURL + "?presence=off", token: tokens.accessToken)
            #expect(try await brief.next() == .ready(userId: tokens.userID))
            // A session that counts comes and goes: when it closes the user is Off-Line again,
            // although the command's session is still open (it would count as one more otherwise).
            let watch = try await server.connect(token: tokens.accessToken)
            #expect(try await watch.next() == .ready(userId: tokens.userID))
            #expect(try await RChatHarness.eventually(timeout: .seconds(30)) { try await store.body(of: user)?["presence"] == "On-Line" })
            _ = await watch.close()
            #expect(try await RChatHarness.eventually(timeout: .seconds(30)) { try await store.body(of: user)?["presence"] == "Off-Line" })
            _ = await brief.close()
        }
    }
}
