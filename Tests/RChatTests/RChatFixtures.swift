import Foundation
import PartitionSync
import RChat
import SyncProtocol
import SyncServer
import SyncStorage
import SyncTesting
import SyncTriggers

func key(_ collection: String, _ id: String) -> ObjectKey { try! ObjectKey(collection: collection, id: id) }
func path(_ text: String) -> Path { try! Path(parsing: text) }

/// RChat on a test server, with triggers tuned for tests.
enum RChatHarness {
    static func configure(_ configuration: inout ServerConfiguration) {
        configuration.triggers.leaseDuration = .seconds(2)
        configuration.triggers.leaseRenewal = .milliseconds(200)
        configuration.triggers.pollInterval = .milliseconds(100)
        configuration.presenceLease = .seconds(3)
    }

    static func with<Result: Sendable>(_ body: @escaping @Sendable (TestDatabase, TestServer) async throws -> Result) async throws -> Result {
        try await TestDatabase.with { db in
            try await TestServer.with(database: db.url, application: RChat.application, configure: configure) { server in
                try await body(db, server)
            }
        }
    }

    /// Polls until `condition` holds.
    static func eventually(timeout: Duration = .seconds(20), _ condition: @Sendable () async throws -> Bool) async throws -> Bool {
        try await TestTriggers.eventually(timeout: timeout, condition)
    }

    /// A conversation as a creator writes it into their own User record: themselves active,
    /// the others pending.
    static func conversation(_ id: String, name: String, creator: String, members: [String]) -> JSONValue {
        let list: [JSONValue] = [["userName": .string(creator), "membershipStatus": .string(MembershipStatus.active.rawValue)]]
            + members.map { ["userName": .string($0), "membershipStatus": .string(MembershipStatus.pending.rawValue)] }
        return ["id": .string(id), "displayName": .string(name), "unreadCount": 0, "members": .array(list)]
    }

    static func message(_ id: String, in conversation: String, author: String, text: String) -> SyncOperation {
        .put(key(ChatMessage.collection, id), body: [
            "author": .string(author), "text": .string(text), "location": [],
            "timestamp": .string(JSONValue.iso8601(Date())),
        ])
    }
}

extension PartitionCopy {
    func unreadCount(user: String, conversation: String) -> Int64? {
        bodies[key(User.collection, user)]?["conversations"]?.arrayValue?
            .first { $0["id"] == .string(conversation) }?["unreadCount"]?.intValue
    }
}
