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
}
